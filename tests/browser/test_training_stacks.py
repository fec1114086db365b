"""Choosing a training stack in real Chromium (issue 14): one select for a first-time user, the
switches folded out for those who want them, system RAM shown when something is offloaded."""

import pytest

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def recompute(page, action) -> None:
    with page.expect_response(
        lambda r: r.request.headers.get("hx-request") == "true" and "/suggest" not in r.url
    ):
        action()
    page.wait_for_timeout(80)


def test_a_stack_is_one_select_and_its_switches_fold_out(page, live_server):
    page.goto(live_server.url + "/?model=Llama+3.1+8B&mode=full_finetune&gpu=rtx-4090-24gb")
    assert page.is_visible("#id_stack")
    assert not page.is_visible("#id_opt_offload")  # folded away until asked for
    recompute(page, lambda: page.select_option("#id_stack", "deepspeed"))
    page.wait_for_function(
        "() => document.querySelector('#result').innerText.includes('As DeepSpeed runs it')"
    )
    page.click("[data-testid=stack-switches] summary")
    assert page.is_visible("#id_opt_offload")
    recompute(page, lambda: page.select_option("#id_opt_offload", "on"))
    page.wait_for_selector("[data-testid=host-ram]")
    recompute(page, lambda: page.fill("#id_ram", "64"))
    page.wait_for_selector("[data-testid=host-verdict]")
    assert "more than your 64" in page.inner_text("[data-testid=host-verdict]")
    assert "stack=deepspeed" in page.url
    assert "opt_offload=on" in page.url
    screenshot(page, "training-stack-deepspeed")
    assert page.server_errors == []


def test_inference_links_leave_the_training_switches_out(page, live_server):
    page.goto(live_server.url + "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb")
    assert not page.is_visible("#id_stack")
    recompute(page, lambda: page.fill("#id_seq", "8192"))
    assert "stack=" not in page.url
    assert "opt_impl=" not in page.url

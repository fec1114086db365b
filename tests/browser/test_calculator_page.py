"""The calculator page in real headless Chromium: live recompute, permalinks, saved links, a11y."""

import re

import pytest
from axe_playwright_python.sync_playwright import Axe

from calculator.catalogue.models import ModelPreset
from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def headline(page) -> str:
    return page.locator("#result .total").inner_text()


def wait_for_recompute(page, action) -> None:
    with page.expect_response(lambda r: "/?" in r.url and r.request.headers.get("hx-request")):
        action()
    page.wait_for_timeout(50)


def test_typing_a_short_name_picks_the_preset(page, live_server):
    page.goto(live_server.url + "/")
    wait_for_recompute(page, lambda: page.fill("#id_model", "qwen2-7B"))
    page.wait_for_function("() => document.querySelector('#result').innerText.includes('Qwen2 7B')")
    assert "model=qwen2-7B" in page.url
    assert page.server_errors == []
    screenshot(page, "calculator-qwen2-7b")


def test_changes_update_the_result_without_a_page_load(page, live_server, browser):
    page.goto(live_server.url + "/?model=Llama+3.1+8B")
    page.evaluate("window.__sameDocument = true")
    before = headline(page)

    wait_for_recompute(page, lambda: page.select_option("#id_mode", "lora"))
    after_mode = headline(page)
    wait_for_recompute(page, lambda: page.select_option("#id_precision", "fp32"))
    wait_for_recompute(page, lambda: page.fill("#id_batch", "4"))
    wait_for_recompute(page, lambda: page.select_option("#id_gpu", "a100-sxm-80gb"))
    final = headline(page)

    assert page.evaluate("window.__sameDocument") is True  # no navigation happened
    assert before != after_mode != final
    assert re.search(r"mode=lora.*precision=fp32.*batch=4.*gpu=a100-sxm-80gb", page.url)
    assert "A100" in page.locator("#result .verdict").inner_text()
    # Fields that do not apply are hidden: LoRA rank shows for LoRA, KV precision does not.
    assert page.locator("#id_lora_rank").is_visible()
    assert not page.locator("#id_kv").is_visible()
    screenshot(page, "calculator-lora-a100")

    fresh = browser.new_context(java_script_enabled=False)
    other = fresh.new_page()
    other.goto(page.url)
    assert other.locator("#result .total").inner_text() == final
    fresh.close()
    assert page.server_errors == []


def test_saved_link_survives_an_admin_edit(page, live_server):
    page.goto(live_server.url + "/?model=Mistral+7B&mode=inference&seq=8192")
    total = headline(page)
    page.click("text=Save link")
    page.wait_for_url(re.compile(r"/r/[A-Za-z0-9_-]{20,}$"))
    saved_url = page.url
    assert headline(page) == total

    preset = ModelPreset.objects.get(slug="mistral-7b-v0.1")
    preset.config = {**preset.config, "num_hidden_layers": 16}
    preset.save()

    page.goto(saved_url)
    assert headline(page) == total
    assert "has changed since this link was saved" in page.content()
    screenshot(page, "saved-link-after-edit")
    page.click("text=Recompute with today's data")
    assert headline(page) != total


def test_a_bad_value_shows_its_message_and_no_server_error(page, live_server):
    page.goto(live_server.url + "/")
    total = headline(page)
    wait_for_recompute(page, lambda: page.fill("#id_batch", "-5"))
    page.wait_for_selector("#errors_batch:has-text('Must be at least 1.')")
    # The last valid result stays visible (dimmed) instead of a blank panel.
    assert headline(page) == total
    opacity = page.evaluate("getComputedStyle(document.querySelector('#result')).opacity")
    assert float(opacity) < 1
    assert page.server_errors == []
    screenshot(page, "calculator-bad-value")


def test_usable_on_a_phone_and_passes_an_accessibility_check(browser, live_server, catalogue):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.goto(live_server.url + "/")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, "the page scrolls sideways on a phone"
    screenshot(page, "calculator-phone")
    results = Axe().run(page)
    # Moderate issues count too (issue 17 tightened the check), not only serious and critical.
    found = [v for v in results.response["violations"] if v["impact"] != "minor"]
    assert found == [], results.generate_report()
    context.close()


def test_suggestions_appear_while_typing(page, live_server):
    page.goto(live_server.url + "/")
    with page.expect_response(lambda r: "/suggest" in r.url):
        page.fill("#id_model", "qwen2.5")
    options = page.locator("#model-suggestions option")
    page.wait_for_function(
        "() => document.querySelectorAll('#model-suggestions option').length > 1"
    )
    values = [options.nth(i).get_attribute("value") for i in range(options.count())]
    assert any(value.startswith("Qwen2.5") for value in values)
    # A datalist is the browser's own keyboard-navigable list (arrow keys, Enter).
    assert page.locator("#id_model").get_attribute("list") == "model-suggestions"

"""'Save link' in real headless Chromium: the saved page opens and shows what the live page
showed (issue 25: a llama.cpp result and a training result with optimizer offload gave a 500)."""

import re

import pytest

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

# The walkthrough's cases: persona 1 (Qwen3 30B on an RTX 3060; -ngl 24, since the walkthrough's
# -ngl 29 no longer fits once the split is priced from the GGUF layout, and a setup that
# does not run shows no speed) and persona 3
# (full fine-tuning, DeepSpeed ZeRO-3 on 8× A100 40 GB, optimizer offload, 512 GB of RAM).
CASES = {
    "llama-cpp": (
        "/?model=Qwen3+30B-A3B&runtime=llama_cpp&gpu=rtx-3060-12gb&ngl=24&seq=16384&ram=32"
    ),
    "optimizer-offload": (
        "/?model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&zero=3&gpus=8"
        "&gpu=a100-sxm-40gb&batch=4&seq=4096&ckpt=on&opt_offload=on&ram=512&train_b=1&price=1.5"
    ),
}
# What the saved page must show as the live page shows it.
SHOWN = (
    "#result .total",
    "#result .verdict",
    "[data-testid=speed]",
    "[data-testid=host-ram]",
    "[data-testid=host-verdict]",
    "#result table.components",
)


def shown(page) -> dict[str, list[str]]:
    return {selector: page.locator(selector).all_inner_texts() for selector in SHOWN}


@pytest.mark.parametrize("path", CASES.values(), ids=CASES.keys())
def test_save_link_opens_the_saved_page_with_every_figure(page, live_server, browser, path):
    page.goto(live_server.url + path)
    live = shown(page)
    assert live["[data-testid=speed]"], "the live page shows a speed"
    assert live["[data-testid=host-verdict]"], "and a verdict on the RAM given"
    page.click("text=Save link")
    page.wait_for_url(re.compile(r"/r/[A-Za-z0-9_-]{22}$"))
    assert page.locator("h1").inner_text() == "Saved result"
    assert shown(page) == live
    screenshot(page, "saved-link-" + ("llama-cpp" if "llama_cpp" in path else "optimizer-offload"))

    # The colleague who gets the link, in a browser of their own.
    fresh = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    other = fresh.new_page()
    response = other.goto(page.url)
    assert response is not None
    assert response.status == 200
    assert shown(other) == live
    fresh.close()
    assert page.server_errors == []

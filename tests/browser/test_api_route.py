""" "Use from the API or the command line" in real headless Chromium: the block opens, its copy
button puts the curl command on the clipboard, and the body it posts gives the total the page
shows (issue 25, persona 4, defect 6)."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

QUERY = "/?model=Qwen2.5+72B&runtime=vllm&gpus=2&tp=2&gpu=h100-sxm-80gb&seq=32768&quant=fp8&vkv=fp8"


@pytest.fixture
def clipboard_page(browser, live_server, catalogue):
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        locale="en-US",
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    yield page
    context.close()


def test_the_copy_button_copies_the_curl_that_gives_the_pages_total(clipboard_page, live_server):
    page = clipboard_page
    page.goto(live_server.url + QUERY)
    block = page.locator("[data-testid=api-route]")
    assert not block.evaluate("details => details.open"), "collapsed until asked for"
    button = block.locator("[data-copy=api-route-curl]")
    assert button.text_content() == "Copy the curl command"
    assert not button.is_visible()
    block.locator("summary").click()
    assert button.is_visible()
    button.click()
    expect(button).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == block.locator("#api-route-curl").text_content()
    assert copied.startswith(f"curl -s -X POST {live_server.url}/api/v1/estimate ")
    screenshot(page, "api-route-open")

    # The body the shell's heredoc would send, posted as it is.
    document = copied.split("<<'JSON'\n", 1)[1].rsplit("\nJSON", 1)[0]
    answer = page.request.post(
        live_server.url + "/api/v1/estimate",
        data=document,
        headers={"Content-Type": "application/json"},
    )
    assert answer.ok
    shown = page.locator("#result .total .num").inner_text()
    assert f"{json.loads(answer.text())['total_bytes'] / 2**30:.2f}" == shown

    # The other two copy buttons copy their own text.
    address = block.locator("[data-copy=api-route-get]")
    assert address.text_content() == "Copy the address"
    address.click()
    expect(address).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()").startswith(
        f"{live_server.url}/api/v1/estimate?model=Qwen2.5+72B"
    )
    docs = block.get_by_role("link", name="API documentation")
    assert docs.get_attribute("href") == "/api/v1/docs"


def test_after_typing_the_block_holds_the_last_inputs(page, live_server):
    """A recompute's first view leaves the block to the part loaded next; typing fast sends one
    recompute per keystroke, and only the last edit's block may land (an older answer finds no
    slot of its inputs' name)."""
    page.goto(live_server.url + "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=4096")
    page.click("#id_seq")
    page.keyboard.press("Control+A")
    page.keyboard.type("12345", delay=15)
    block = page.locator("[data-testid=api-route]")
    expect(block.locator("#api-route-get")).to_contain_text("seq=12345")
    expect(block).to_have_count(1)
    assert '"seq_len": 12345' in block.locator("#api-route-curl").text_content()
    assert page.server_errors == []

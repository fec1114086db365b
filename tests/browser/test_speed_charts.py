"""Speed and charts (issue 15) in real Chromium: on a phone, in every language.

Figure: an RTX 4090 24GB exposes 23.99 GiB to programs (the catalogue's usable memory), which the
memory chart draws as its limit line.
"""

import pytest

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser
LANGUAGES = ["en", "es", "pt-br", "zh-hans", "fr", "de", "ja", "ko"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_speed_and_charts_on_a_phone(browser, live_server, catalogue, language):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("response", lambda r: errors.append(r.url) if r.status >= 500 else None)
    prefix = "" if language == "en" else f"/{language}"
    page.goto(f"{live_server.url}{prefix}/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&batch=4")
    assert page.locator("[data-testid=speed]").is_visible()
    speed_text = page.inner_text("[data-testid=speed]")
    assert any(ch.isdigit() for ch in speed_text)
    page.wait_for_selector("#chart-memory svg")
    page.wait_for_selector("#chart-speed svg")
    for chart in ("#chart-memory svg", "#chart-speed svg"):
        box = page.locator(chart).bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The limit line is labelled with the card's usable memory, in the page's number format.
    label = page.locator("#chart-memory .limit-label").text_content() or ""
    assert "24" in label.replace(",", ".") or "23" in label.replace(",", ".")
    page.locator("#chart-memory").scroll_into_view_if_needed()
    screenshot(page, f"charts-phone-{language}")
    page.locator(".charts").screenshot(
        path=str(
            screenshot(page, f"charts-phone-{language}").parent / f"charts-only-{language}.png"
        )
    )
    assert errors == []
    context.close()


@pytest.mark.parametrize("language", ["en", "de", "ja"])
def test_vllm_charts_concurrency_not_memory_on_a_phone(browser, live_server, catalogue, language):
    """vLLM reserves its KV-cache pool at start-up: its chart is the requests the pool holds
    against --max-model-len, with the length past which it does not start shaded.

    Figure: Llama 3.1 8B on an RTX 3090 (vllm-project/vllm#10517's setting, 20,000 tokens): the
    published log's pool holds 1.56 such requests, so the ringed point sits above one request and
    the limit (one request of 31,232 tokens in that log) lies between 16,384 and 131,072."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("response", lambda r: errors.append(r.url) if r.status >= 500 else None)
    prefix = "" if language == "en" else f"/{language}"
    page.goto(
        f"{live_server.url}{prefix}/?model=Llama+3.1+8B&runtime=vllm&seq=20000&batched=20000"
        "&max_seqs=256&gpu=rtx-3090-24gb"
    )
    page.wait_for_selector("#chart-concurrency svg")
    assert page.locator("#chart-memory").count() == 0
    box = page.locator("#chart-concurrency svg").bounding_box()
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The shaded region starts at the limit line and ends at the plot's right edge.
    limit = page.locator("#chart-concurrency line.limit")
    beyond = page.locator("#chart-concurrency rect.beyond")
    assert limit.count() == 1
    assert beyond.count() == 1
    limit_x = float(limit.get_attribute("x1") or "0")
    assert float(beyond.get_attribute("x") or "-1") == limit_x
    label = (page.locator("#chart-concurrency .limit-label").text_content() or "").strip()
    longest = int("".join(ch for ch in label if ch.isdigit()))
    assert 16_384 < longest < 131_072
    # The ringed point (20,000 tokens) lies left of the limit: vLLM starts there.
    ring = page.locator("#chart-concurrency circle.current")
    assert float(ring.get_attribute("cx") or "0") < limit_x
    note = page.inner_text("#chart-concurrency .chart-note")
    assert "20" in note
    assert any(ch.isdigit() for ch in note)
    page.locator("#chart-concurrency").scroll_into_view_if_needed()
    path = screenshot(page, f"charts-vllm-phone-{language}")
    page.locator(".charts").screenshot(path=str(path.parent / f"charts-vllm-only-{language}.png"))
    assert errors == []
    context.close()

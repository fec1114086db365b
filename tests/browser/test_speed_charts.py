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

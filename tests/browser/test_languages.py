"""The page in each of the eight languages, in real Chromium, with a screenshot per language."""

import pytest
from django.utils import translation

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser
LANGUAGES = ["en", "es", "pt-br", "zh-hans", "fr", "de", "ja", "ko"]


def expected(language: str, message: str, **params) -> str:
    with translation.override(language):
        text = translation.gettext(message)
    return text % params if params else text


@pytest.mark.parametrize("language", LANGUAGES)
def test_page_speaks_the_language(page, live_server, language):
    prefix = "" if language == "en" else f"/{language}"
    page.goto(f"{live_server.url}{prefix}/?model=qwen2-7B&batch=-2")
    assert page.locator("html").get_attribute("lang") == language
    assert page.title() == expected(language, "GPU memory calculator for LLMs")
    assert page.locator("label[for=id_seq]").inner_text() == expected(
        language, "Sequence length (tokens)"
    )
    message = expected(language, "Must be at least %(limit_value)s.", limit_value=1)
    assert message in page.locator("#errors_batch").inner_text()
    if language != "en":
        assert page.title() != "GPU memory calculator for LLMs"
    page.fill("#id_batch", "3")
    page.wait_for_timeout(800)  # the debounced recompute
    screenshot(page, f"language-{language}")


def test_switching_language_keeps_the_inputs(page, live_server):
    page.goto(live_server.url + "/?model=Mistral+7B&mode=lora&batch=3&seq=1024")
    page.click("#lang-switch a[hreflang=ja]")
    page.wait_for_url("**/ja/?**")
    assert "mode=lora" in page.url
    assert "batch=3" in page.url
    assert page.locator("#id_batch").input_value() == "3"
    assert page.locator("html").get_attribute("lang") == "ja"
    # A link shared from /ja/ opens the same numbers in /de/: permalinks are locale-neutral.
    ja_total = page.locator("#result .total .num").inner_text()
    page.goto(page.url.replace("/ja/", "/de/"))
    de_total = page.locator("#result .total .num").inner_text()
    assert ja_total.replace(",", ".") == de_total.replace(",", ".")


def test_the_language_links_follow_the_inputs_changed_on_the_page(page, live_server):
    """A recompute changes the URL without reloading; the switcher then carries the new inputs
    (app.js), by mouse and by keyboard. Before issue 16 the server re-sent the switcher with
    every recompute."""
    page.goto(live_server.url + "/?model=Mistral+7B&mode=lora&batch=3&seq=1024")
    page.fill("#id_batch", "5")
    page.wait_for_url("**batch=5**")
    page.click("#lang-switch a[hreflang=de]")
    page.wait_for_url("**/de/?**")
    assert "batch=5" in page.url
    assert page.locator("#id_batch").input_value() == "5"
    page.fill("#id_seq", "2048")
    page.wait_for_url("**seq=2048**")
    page.focus("#lang-switch a[hreflang=fr]")
    page.keyboard.press("Enter")
    page.wait_for_url("**/fr/?**")
    assert "seq=2048" in page.url
    assert "batch=5" in page.url
    assert page.server_errors == []

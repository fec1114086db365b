"""Issue 25 in Chromium: the walkthrough's admin (section 6) and its "did you mean" and long
paste on the public page. Mistral-7B-v0.1's published config is validation/configs (SOURCES.md);
the upload limit is Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 512 KiB here (config/settings.py)."""

import json
from pathlib import Path

import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_admin_conflicts import log_in

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
MISTRAL = json.loads((ROOT / "validation/configs/mistral-7b-v0.1.json").read_text())
# The admin's own colour for field errors (django/contrib/admin/static/admin/css/base.css,
# --error-fg: #ba2121).
ADMIN_ERROR_RGB = "rgb(186, 33, 33)"


def padded(chars: int) -> str:
    text = json.dumps({**MISTRAL, "note": ""})
    return text[:-2] + "x" * (chars - len(text)) + '"}'


def save(page) -> None:
    with page.expect_navigation():
        page.click("input[name=_save]")


def test_an_admin_adds_a_preset_that_the_page_then_finds(page, live_server):
    log_in(page, live_server.url, "walk")
    page.goto(live_server.url + "/admin/calculator/modelpreset/add/")
    assert page.input_value("#id_config") == ""  # not "null"
    page.fill("#id_slug", "my-mistral-test")
    page.fill("#id_display_name", "My Mistral Test")
    page.fill("#id_family", "mistral")

    missing = {
        k: v
        for k, v in MISTRAL.items()
        if k not in ("hidden_size", "num_hidden_layers", "num_attention_heads")
    }
    page.fill("#id_config", json.dumps(missing))
    save(page)
    errors = page.locator(".form-row.field-config ul.errorlist li")
    assert errors.count() == 3
    text = errors.all_inner_texts()
    # Width, depth and heads are required; an omitted vocab_size takes MistralConfig's default.
    for name in ("hidden_size", "num_hidden_layers", "num_attention_heads"):
        assert any(f"'{name}'" in line for line in text), name
    assert errors.first.evaluate("e => getComputedStyle(e).color") == ADMIN_ERROR_RGB
    screenshot(page, "admin-config-every-problem")

    # A 2 MB paste: the admin's own form again, what was typed kept, the limit named.
    page.fill("#id_config", padded(2_000_000))
    save(page)
    error = page.locator(".form-row.field-config ul.errorlist li")
    assert error.count() == 1
    assert "Too large to send" in error.inner_text()
    assert "512.0\xa0KB" in error.inner_text()
    assert page.input_value("#id_display_name") == "My Mistral Test"
    assert page.input_value("#id_slug") == "my-mistral-test"
    screenshot(page, "admin-config-two-megabytes")

    page.fill("#id_config", json.dumps(MISTRAL))
    save(page)
    messages = page.locator(".messagelist").inner_text()
    assert "was added successfully" in messages
    assert (
        "The page and the API find this preset by: “My Mistral Test”, “my-mistral-test”" in messages
    )

    page.goto(live_server.url + "/?model=My+Mistral+Test")
    assert "My Mistral Test" in page.locator("#result").inner_text()
    assert page.server_errors == []


def test_a_visitor_gets_suggestions_and_a_length_limit(page, live_server):
    page.goto(live_server.url + "/")
    with page.expect_response(
        lambda r: r.request.headers.get("hx-request") == "true" and "/suggest" not in r.url
    ):
        page.fill("#id_model", "qwen2-7c")
    links = page.locator("#errors_model .suggest-line a")
    links.first.wait_for()
    assert "Did you mean:" in page.locator("#errors_model").inner_text()
    names = links.all_inner_texts()
    assert "Qwen2 7B" in names
    # Styled as a suggestion, not as part of the red error.
    assert links.first.evaluate("e => getComputedStyle(e.parentElement).fontWeight") == "400"
    screenshot(page, "did-you-mean")
    links.nth(names.index("Qwen2 7B")).click()
    page.wait_for_function("() => document.querySelector('#result').innerText.includes('Qwen2 7B')")

    # 250,000 characters of valid JSON: too long, said so, never cut and called invalid.
    page.check("input[name=source][value=config]")
    with page.expect_response(lambda r: r.request.method == "POST"):
        page.fill("#id_config", padded(250_000))
    page.wait_for_selector(
        "#errors_config:has-text('The config is too long (at most 200,000 characters).')"
    )
    assert "not valid JSON" not in page.locator("#errors_config").inner_text()
    assert len(page.input_value("#id_config")) == 250_000
    assert page.server_errors == []

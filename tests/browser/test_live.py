"""Issue 31: the result follows typing. In real Chromium: the figures change while the field still
has the focus, a half-typed model name or a cleared number never flashes an error or a default's
figure, and the sign that a newer answer is on its way moves nothing on the page. How fast is
measured by `make bench-live` (benchmarks/live.py), not here."""

import pytest

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

START = "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=4096"
RECORD_MESSAGES = """() => {
  window.__messages = [];
  const seen = () => document.querySelectorAll(".calc-form .field-errors").forEach((slot) => {
    if (slot.textContent.trim()) window.__messages.push(slot.id + ": " + slot.textContent.trim());
  });
  new MutationObserver(seen).observe(document.getElementById("calc"), { subtree: true, childList: true, characterData: true });
}"""


def total(page) -> str:
    return page.locator("#result .total .num").inner_text()


def test_the_figures_follow_the_typing_before_the_field_is_left(page, live_server):
    page.goto(live_server.url + START)
    before = total(page)
    page.click("#id_seq")
    page.keyboard.press("Control+A")
    page.keyboard.type("32768")
    page.wait_for_function(
        "before => document.querySelector('#result .total .num').innerText !== before", arg=before
    )
    assert page.evaluate("document.activeElement.id") == "id_seq"
    assert "seq=32768" in page.url
    assert page.server_errors == []


def test_typing_a_model_name_or_clearing_a_number_flashes_no_message(page, live_server):
    page.goto(live_server.url + START)
    page.evaluate(RECORD_MESSAGES)
    page.fill("#id_model", "")
    for char in "Mistral 7B":
        page.keyboard.type(char)
        page.wait_for_timeout(120)  # each keystroke's recompute is sent and answered
    page.wait_for_function(
        "() => document.querySelector('#result').innerText.includes('Mistral 7B')"
    )
    page.click("#id_seq")
    page.keyboard.press("Control+A")
    page.keyboard.press("Backspace")
    page.wait_for_timeout(200)
    shown = total(page)  # the field is empty: the last figure stays, no "required" message
    page.keyboard.type("2048")
    page.wait_for_function(
        "shown => document.querySelector('#result .total .num').innerText !== shown", arg=shown
    )
    assert page.evaluate("window.__messages") == []
    # Leaving a field that still does not make sense says so, as before.
    page.fill("#id_model", "no such model at all")
    page.click("#id_batch")
    page.wait_for_selector("#errors_model span")
    assert page.server_errors == []


def test_the_pending_sign_moves_nothing(page, live_server):
    page.goto(live_server.url + START)
    page.wait_for_load_state("networkidle")
    # The headline's place within the result: what the pending sign must not move (the page
    # above the result can change for reasons of its own in a long suite run).
    top = (
        "document.querySelector('#result .headline').getBoundingClientRect().top"
        " - document.getElementById('result').getBoundingClientRect().top"
    )
    before = page.evaluate(top)
    held = []
    # Every keystroke's answer is held (8, 80, 800, 8000): on a loaded machine the debounce can
    # let an early one through, whose figures (a different result) may take other room.
    page.route(
        lambda url: "seq=8" in url and "part=more" not in url, lambda route: held.append(route)
    )
    page.click("#id_seq")
    page.keyboard.press("Control+A")
    page.keyboard.type("8000")
    page.wait_for_function(
        "() => document.getElementById('result-state').hasAttribute('data-pending')"
    )
    page.wait_for_timeout(150)
    assert held
    assert page.locator("#result-state").is_visible()
    assert page.evaluate(top) == before
    position = page.evaluate("getComputedStyle(document.getElementById('result-state')).position")
    assert position in {"absolute", "fixed"}  # out of the flow: it takes no room
    opacity = page.evaluate("getComputedStyle(document.querySelector('#result .headline')).opacity")
    assert float(opacity) < 1  # the figures are dimmed while their successor is on its way
    screenshot(page, "live-pending")
    for route in held:
        route.continue_()
    page.wait_for_function(
        "() => !document.getElementById('result-state').hasAttribute('data-pending')"
    )
    assert page.evaluate(top) == before
    position = page.evaluate("getComputedStyle(document.getElementById('result-state')).position")
    assert position in {"absolute", "fixed"}  # out of the flow: it takes no room
    assert page.server_errors == []

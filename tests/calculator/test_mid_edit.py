"""Issue 31: the page recomputes as the visitor types, so a keystroke that leaves a field empty or
not yet making sense (app.js names the field in X-Mid-Edit) gets "nothing yet" (204: htmx swaps
nothing, the last result stays), never an error or a default's figure. Leaving the field (its
change event, no X-Mid-Edit) asks in full and shows the message as before."""

import pytest

pytestmark = pytest.mark.django_db

PAGE = "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb"


def recompute(client, query: str, typing: str | None = None):
    headers = {"HTTP_HX_REQUEST": "true"}
    if typing:
        headers["HTTP_X_MID_EDIT"] = typing
    return client.get("/?" + query, **headers)


def test_a_number_cleared_to_be_retyped_keeps_the_last_result(client):
    # Between "8192" deleted and "16384" typed the field is empty: a message that the field is
    # required flashed up, and the result dimmed, at every retyped number.
    assert recompute(client, "model=Llama+3.1+8B&seq=", typing="seq").status_code == 204
    left = recompute(client, "model=Llama+3.1+8B&seq=")
    assert left.status_code == 200
    assert b'id="errors_seq"' in left.content  # once the field is left, it says so
    # An optional number emptied while typing waits too: its default's figure would flash
    # between the old number and the new one.
    assert recompute(client, "model=Llama+3.1+8B&prompt=", typing="prompt").status_code == 204


def test_a_number_that_does_not_parse_yet_waits(client):
    assert recompute(client, "model=Llama+3.1+8B&batch=-", typing="batch").status_code == 204
    full = recompute(client, "model=Llama+3.1+8B&batch=-")
    assert full.status_code == 200
    assert b'id="errors_batch"' in full.content  # the message once the field is left


def test_each_keystroke_of_a_valid_number_answers_at_once(client):
    # "8", "81", "819", "8192": each is a sequence length the estimator takes (1 ≤ seq).
    for typed in ("8", "81", "819", "8192"):
        response = recompute(client, f"model=Llama+3.1+8B&seq={typed}", typing="seq")
        assert response.status_code == 200
        assert b'class="total"' in response.content


def test_a_half_typed_model_name_neither_errs_nor_asks_the_hub(client, hub):
    for typed in ("m", "mistr", "mistral 7", "meta-llama/Lla"):
        response = recompute(client, f"model={typed}", typing="model")
        assert response.status_code == 204, typed
    assert hub.requests == []  # a repository id half typed is not looked up on the Hub
    # "Mistral 7B" is a catalogue name (presets/models/mistral.json): it answers at once.
    done = recompute(client, "model=Mistral+7B", typing="model")
    assert done.status_code == 200
    assert b"Mistral 7B" in done.content
    # Leaving the field with a name that matches nothing shows the message, as before.
    left = recompute(client, "model=mistr")
    assert left.status_code == 200
    assert "No model in the catalogue matches “mistr”".encode() in left.content


def test_another_fields_error_is_shown_while_typing_a_valid_one(client):
    # The field being typed in is fine; the message belongs to another field, already left.
    response = recompute(client, "model=Llama+3.1+8B&batch=0&seq=2048", typing="seq")
    assert response.status_code == 200
    assert b'id="errors_batch"' in response.content


def test_the_header_names_only_fields_of_the_form(client):
    # An unknown name is ignored: the request is answered as a plain recompute.
    response = recompute(client, "model=Llama+3.1+8B&seq=2048", typing="not-a-field")
    assert response.status_code == 200
    assert b'class="total"' in response.content

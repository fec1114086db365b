"""The calculator page through Django's test client."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_first_load_shows_a_result_for_the_default_model(client):
    response = client.get("/")
    assert response.status_code == 200
    body = text(response)
    assert "GiB" in body
    assert "Fits on" in body or "Does not fit" in body


def test_htmx_request_gets_only_the_result_fragment(client):
    full = client.get("/?model=qwen2-7B")
    partial = client.get("/?model=qwen2-7B", HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    assert b"<html" not in partial.content
    assert b'id="result"' in partial.content
    assert len(partial.content) < len(full.content) / 2
    assert "HX-Request" in partial.headers["Vary"]


def test_history_restore_gets_the_full_page(client):
    response = client.get(
        "/?model=qwen2-7B", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true"
    )
    assert b"<html" in response.content


def test_bad_value_shows_a_message_next_to_the_field(client):
    response = client.get("/?batch=-3")
    assert response.status_code == 200
    assert 'id="errors_batch"' in response.content.decode()
    assert "Must be at least 1." in text(response)


def test_unknown_model_shows_closest_matches_not_a_guess(client):
    response = client.get("/?model=qwen2-7c")
    body = text(response)
    assert "No model in the catalogue matches" in body
    assert "Did you mean:" in body


def test_quantized_full_finetune_is_refused_with_a_message(client):
    response = client.get("/?mode=full_finetune&precision=int4")
    assert "use LoRA or QLoRA" in text(response)


@pytest.mark.parametrize(
    "query",
    [
        "batch=abc",
        "seq=99999999999999999999",
        "gpus=0",
        "tp=3&gpus=4",
        "source=custom",
        "source=config&config={not json",
        "source=config&config=[1,2]",
        'source=config&config={"model_type":"llama"}',
        "mode=bogus",
        "gpu=<script>alert(1)</script>",
        "model=%00%ff",
    ],
)
def test_malformed_permalinks_never_500(client, query):
    response = client.get("/?" + query)
    assert response.status_code == 200


def test_permalink_renders_the_same_numbers_without_javascript(client):
    query = "/?model=Mistral+7B&mode=lora&batch=2&seq=1024&gpu=a100-sxm-80gb"
    assert text(client.get(query)) == text(client.get(query))
    assert "A100" in text(client.get(query))


def test_first_visit_follows_accept_language(client):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9,en;q=0.5")
    assert response.status_code == 302
    assert response["Location"] == "/de/"


def test_a_shared_permalink_opens_as_shared(client):
    response = client.get("/?model=gpt2", HTTP_ACCEPT_LANGUAGE="ja")
    assert response.status_code == 200
    assert response["Content-Language"] == "en"


def test_a_chosen_language_is_remembered(client):
    client.get("/lang/en?next=/")
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="ja")
    assert response.status_code == 200


def test_numbers_follow_the_locale(client):
    german = client.get("/de/?model=gpt2").content.decode()
    assert re.search(r'class="num"[^>]*>\d+,\d\d<', german)  # decimal comma
    english = client.get("/?model=gpt2").content.decode()
    assert re.search(r'class="num"[^>]*>\d+\.\d\d<', english)


def test_pasted_config_and_custom_architecture_give_results(client):
    # Qwen2.5-0.5B's published config.json (validation/configs): 494,032,768 parameters.
    config = (
        Path(__file__).resolve().parents[2] / "validation/configs/qwen2.5-0.5b.json"
    ).read_text()
    pasted = client.get("/", {"source": "config", "config": config, "format": "json"}).json()
    assert pasted["params_total"] == 494_032_768
    custom = client.get("/", {"source": "custom", "params": "7", "format": "json"}).json()
    assert custom["params_total"] == 7_000_000_000

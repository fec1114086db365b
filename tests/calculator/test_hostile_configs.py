"""Configs no model has, on every surface: the page (GET, htmx, the deferred part, POST), a
saved link, the JSON API and the CLI answer with a message naming the field, never a 500.

Reproductions from the security review of 654b6a2 (findings 1, 5 and 16), on Llama 3.1 8B's
published config.json with one field changed.
"""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from calculator.catalogue.models import PastedConfig, SavedResult

pytestmark = pytest.mark.django_db

# The review's link: hidden_size 10¹² sent the chart's tick loop into an endless loop (30 s,
# 2 GB, worker killed) on the page, its htmx fragments and the save.
REVIEW_CONFIG = (
    '{"model_type":"llama","hidden_size":1000000000000,"intermediate_size":11008,'
    '"num_attention_heads":32,"num_hidden_layers":32,"vocab_size":32000}'
)


def deep(depth: int) -> str:
    return '{"x": ' + '{"a": ' * depth + "1" + "}" * depth + "}"


def with_field(config: dict, field: str, raw_value: str) -> str:
    """``config`` as JSON text with ``field`` set to ``raw_value`` written as is (NaN, 1e400 and
    10²⁰⁰ are JSON text Python's parser reads, but no JSON writer produces)."""
    text = json.dumps({**config, field: "__VALUE__"})
    return text.replace('"__VALUE__"', raw_value)


@pytest.mark.parametrize(
    "headers",
    [{}, {"HTTP_HX_REQUEST": "true"}],
    ids=["page", "htmx"],
)
@pytest.mark.parametrize("part", ["", "more"])
def test_the_reviews_link_gets_a_message_not_a_hung_worker(client, headers, part):
    params = {"source": "config", "config": REVIEW_CONFIG}
    if part:
        params["part"] = part
    response = client.get("/", params, **headers)
    assert response.status_code == 200
    body = response.content.decode()
    if part == "more":
        # The deferred part of an invalid form is empty: the message is in the first part.
        assert 'id="more"' in body
        assert "must be at most" not in body
    else:
        assert "must be at most 1,000,000" in body


def test_saving_the_reviews_link_is_refused_with_a_reason(client):
    response = client.post("/r/", {"query": f"source=config&config={REVIEW_CONFIG}"})
    assert response.status_code == 400
    assert SavedResult.objects.count() == 0


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("NaN", "finite"),
        ("Infinity", "finite"),
        ("-Infinity", "finite"),
        ("1e400", "finite"),  # Python's parser reads 1e400 as Infinity
        ("1e300", "at most 1,000,000"),
        ("1" + "0" * 200, "at most 1,000,000"),
        ("1" + "0" * 400, "no number type"),
    ],
)
def test_impossible_numbers_in_an_api_config_are_a_422_naming_the_field(
    client, llama31_8b, raw, words
):
    body = '{"model": {"config": ' + with_field(llama31_8b, "hidden_size", raw) + "}}"
    response = client.post("/api/v1/estimate", body, content_type="application/json")
    assert response.status_code == 422
    (error,) = response.json()["errors"]
    assert error["field"] == "model.config.hidden_size"
    assert words in error["message"]


@pytest.mark.parametrize(
    ("field", "raw"),
    [("vocab_size", "1" + "0" * 200), ("intermediate_size", "1e300")],
)
def test_absurd_sizes_that_were_answered_200_are_refused(client, llama31_8b, field, raw):
    # Finding 16: these came back 200 with 10²⁶ bytes and a headroom JavaScript cannot hold.
    body = '{"model": {"config": ' + with_field(llama31_8b, field, raw) + "}}"
    response = client.post("/api/v1/estimate", body, content_type="application/json")
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == f"model.config.{field}"


@pytest.mark.parametrize("depth", [30, 300])
def test_deep_nesting_in_a_config_is_refused_everywhere(client, llama31_8b, depth):
    config = json.dumps(llama31_8b)[:-1] + ', "x": ' + deep(depth) + "}"
    api = client.post(
        "/api/v1/estimate", '{"model": {"config": ' + config + "}}", content_type="application/json"
    )
    assert api.status_code == 422
    assert "deeper than" in api.json()["errors"][0]["message"]
    page = client.post("/", {"source": "config", "config": config}, HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    assert "deeper than" in page.content.decode()


def test_nesting_past_the_json_parser_is_a_400_and_a_message(client, llama31_8b):
    # Past Python's recursion limit no parser reads it: the API's 400, the page's message.
    config = json.dumps(llama31_8b)[:-1] + ', "x": ' + deep(5_000) + "}"
    api = client.post(
        "/api/v1/estimate", '{"model": {"config": ' + config + "}}", content_type="application/json"
    )
    assert api.status_code == 400
    page = client.post("/", {"source": "config", "config": config}, HTTP_HX_REQUEST="true")
    assert "This is not valid JSON." in page.content.decode()


def test_a_refused_config_is_not_stored_for_a_link(client):
    client.post("/", {"source": "config", "config": REVIEW_CONFIG}, HTTP_HX_REQUEST="true")
    assert PastedConfig.objects.count() == 0


def test_the_get_api_refuses_an_impossible_config_by_name(client):
    response = client.get("/api/v1/estimate", {"source": "config", "config": REVIEW_CONFIG})
    assert response.status_code == 422
    assert "at most 1,000,000" in json.dumps(response.json())


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "1e300"])
def test_the_cli_prints_the_error_and_exits_2(tmp_path, llama31_8b, raw):
    # The review: a traceback and exit status 1 (README: errors, exit 2).
    path = tmp_path / "request.json"
    path.write_text('{"model": {"config": ' + with_field(llama31_8b, "hidden_size", raw) + "}}")
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("estimate", "--json", str(path), stdout=io.StringIO(), stderr=err)
    assert raised.value.returncode == 2
    assert err.getvalue().startswith("model.config.hidden_size: ")

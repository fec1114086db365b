"""The admin's config.json field: empty on the add form, and every problem of a pasted config
named next to it (issue 25, walkthrough section 6, defects 5 and 6)."""

import json
import re

import pytest
from django.utils import timezone

from calculator.catalogue.models import ModelPreset
from tests.calculator.test_admin_conflicts import admin_client, form_fields
from tests.conftest import load_validation_config

pytestmark = pytest.mark.django_db

ADD = "/admin/calculator/modelpreset/add/"
MISTRAL = load_validation_config("mistral-7b-v0.1")


def config_errors(body: str) -> list[str]:
    """The messages of the config field's error list, as the admin renders field errors."""
    row = re.search(r'<div class="form-row[^"]*field-config[^"]*">(.*?)</textarea>', body, re.S)
    assert row, "no config row"
    items = re.search(r'<ul class="errorlist"[^>]*>(.*?)</ul>', row.group(1), re.S)
    return re.findall(r"<li>(.*?)</li>", items.group(1), re.S) if items else []


def post_config(client, text: str):
    data = {
        **form_fields(client.get(ADD)),
        "slug": "my-mistral-test",
        "display_name": "My Mistral Test",
        "family": "mistral",
        "config": text,
        "_save": "Save",
    }
    return client.post(ADD, data)


def test_the_add_forms_config_field_starts_empty():
    assert form_fields(admin_client("walk").get(ADD))["config"] == ""


def test_every_missing_field_is_named():
    """Three defining sizes taken out of Mistral-7B-v0.1's published config: three messages (a
    field with a MistralConfig default, such as vocab_size, takes it instead)."""
    broken = {
        k: v
        for k, v in MISTRAL.items()
        if k not in ("hidden_size", "num_hidden_layers", "num_attention_heads")
    }
    response = post_config(admin_client("walk"), json.dumps(broken))
    errors = config_errors(response.content.decode())
    assert len(errors) == 3
    for name in ("hidden_size", "num_hidden_layers", "num_attention_heads"):
        assert any(f"missing the field &#x27;{name}&#x27;" in error for error in errors), name
    assert not ModelPreset.objects.filter(slug="my-mistral-test").exists()


def test_bad_values_and_missing_fields_are_all_named():
    broken = {**MISTRAL, "num_hidden_layers": -32, "num_attention_heads": 0}
    del broken["hidden_size"]
    errors = config_errors(post_config(admin_client("walk"), json.dumps(broken)).content.decode())
    assert len(errors) == 3
    assert any("got -32" in error for error in errors)
    assert any(
        "&#x27;num_attention_heads&#x27; must be positive, got 0" in error for error in errors
    )
    assert any("missing the field &#x27;hidden_size&#x27;" in error for error in errors)


def test_invalid_json_gets_one_message_saying_where():
    errors = config_errors(
        post_config(admin_client("walk"), '{"hidden_size": 4096,').content.decode()
    )
    assert len(errors) == 1
    assert errors[0].startswith("This is not valid JSON: Expecting property name")


def test_the_import_page_names_every_missing_field():
    broken = {k: v for k, v in MISTRAL.items() if k not in ("hidden_size", "num_hidden_layers")}
    response = admin_client("walk").post(
        "/admin/calculator/modelpreset/import-config/", {"config_text": json.dumps(broken)}
    )
    body = response.content.decode()
    assert body.count("The estimator cannot use this config") == 2
    assert "hidden_size" in body
    assert "num_hidden_layers" in body


@pytest.mark.parametrize("config", [[1, 2], "x", {"model_type": "llama", "hidden_size": "big"}])
def test_a_config_written_past_the_admin_gets_a_message_not_a_500(client, config):
    """A preset row changed by SQL (no validator runs) into a config the estimator cannot read."""
    ModelPreset.objects.filter(slug="llama-3.1-8b").update(config=config, updated_at=timezone.now())
    for path in ("/?model=Llama+3.1+8B", "/?model=Llama+3.1+8B&part=more", "/fits/"):
        assert client.get(path).status_code == 200, path
    page = client.get("/?model=Llama+3.1+8B", HTTP_HX_REQUEST="true").content.decode()
    assert "configuration cannot be used" in page
    api = client.post(
        "/api/v1/estimate", {"model": {"preset": "llama-3.1-8b"}}, content_type="application/json"
    )
    assert api.status_code == 422

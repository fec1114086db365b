"""A preset added in the admin is found by its name, slug and repo id without hand-made aliases
(issue 25, walkthrough section 6, defect 1)."""

import importlib
import json

import pytest
from django.apps import apps

from calculator.catalogue.models import ModelAlias, ModelPreset
from tests.calculator.test_admin_conflicts import admin_client, form_fields
from tests.conftest import load_validation_config

pytestmark = pytest.mark.django_db

ADD = "/admin/calculator/modelpreset/add/"
# Mistral-7B-v0.1's published config.json (validation/configs, SOURCES.md); its Hugging Face
# page gives 7.24B parameters, and the catalogue's own Mistral 7B v0.1 holds the same config.
MISTRAL = load_validation_config("mistral-7b-v0.1")


def add_preset(client, **values: str):
    data = {
        **form_fields(client.get(ADD)),
        "slug": "my-mistral-test",
        "display_name": "My Mistral Test",
        "family": "mistral",
        "config": json.dumps(MISTRAL),
        "_save": "Save",
        **values,
    }
    return client.post(ADD, data)


def test_a_preset_added_in_the_admin_is_found_by_name_slug_and_repo_id(client):
    """The walkthrough's steps: add "My Mistral Test" with no alias, then look it up."""
    admin = admin_client("walk")
    response = add_preset(admin, hf_repo="walk/My-Mistral-Test")
    assert response.status_code == 302
    preset = ModelPreset.objects.get(slug="my-mistral-test")
    assert preset.params_total == 7_241_732_096  # "7.24B" on the model's Hub page

    for typed in ("My Mistral Test", "my-mistral-test", "walk/My-Mistral-Test"):
        page = client.get("/", {"model": typed}).content.decode()
        assert "No model in the catalogue matches" not in page, typed
        assert "My Mistral Test" in page, typed
        api = client.post(
            "/api/v1/estimate",
            {"model": {"preset": typed}, "mode": "inference", "seq_len": 4096},
            content_type="application/json",
        )
        assert api.status_code == 200, (typed, api.content)
        assert api.json()["model"]["preset"] == "my-mistral-test"
    listed = client.get("/api/v1/models", {"q": "My"}).json()
    assert [row["slug"] for row in listed["results"]] == ["my-mistral-test"]


def test_the_same_config_gives_the_catalogues_numbers(client):
    """Walkthrough: once findable, the preset gave exactly what the catalogue's Mistral 7B
    v0.1 (the same published config) gives."""
    assert add_preset(admin_client("walk")).status_code == 302
    body = {"mode": "inference", "seq_len": 4096}
    ours = client.post(
        "/api/v1/estimate",
        {**body, "model": {"preset": "My Mistral Test"}},
        content_type="application/json",
    ).json()
    catalogue = client.post(
        "/api/v1/estimate",
        {**body, "model": {"preset": "mistral-7b-v0.1"}},
        content_type="application/json",
    ).json()
    assert ours["total_bytes"] == catalogue["total_bytes"]


def test_the_form_says_which_names_find_the_preset():
    admin = admin_client("walk")
    form = admin.get(ADD).content.decode()
    assert "The page and the API find this preset by this name, its slug" in form
    saved = add_preset(admin)
    page = admin.get(saved["Location"]).content.decode()
    assert "The page and the API find this preset by:" in page
    assert "“My Mistral Test”" in page
    assert "“my-mistral-test”" in page


def test_a_renamed_preset_keeps_its_old_name_and_says_so(client):
    admin = admin_client("walk")
    assert add_preset(admin).status_code == 302
    preset = ModelPreset.objects.get(slug="my-mistral-test")
    url = f"/admin/calculator/modelpreset/{preset.pk}/change/"
    data = {**form_fields(admin.get(url)), "display_name": "Mistral Test Two", "_save": "Save"}
    saved = admin.post(url, data)
    assert saved.status_code == 302
    messages = admin.get(saved["Location"]).content.decode()
    assert (
        "Links that use the old display name “My Mistral Test” still find this preset" in messages
    )
    for typed in ("My Mistral Test", "Mistral Test Two"):
        page = client.get("/", {"model": typed}).content.decode()
        assert "No model in the catalogue matches" not in page, typed
        assert "Mistral Test Two" in page, typed


def test_a_name_that_finds_another_preset_is_refused_next_to_its_field():
    """ "Qwen2 7B" is the catalogue's Qwen2 7B (presets/models/qwen.json): a form error, no
    IntegrityError, nothing saved."""
    admin = admin_client("walk")
    response = add_preset(admin, display_name="Qwen2 7B", hf_repo="Qwen/Qwen2-7B")
    body = response.content.decode()
    assert response.status_code == 200
    assert "“Qwen2 7B” already finds Qwen2 7B (one of its aliases)" in body
    assert "“Qwen/Qwen2-7B” already finds Qwen2 7B (one of its aliases)" in body
    assert not ModelPreset.objects.filter(slug="my-mistral-test").exists()


def test_presets_added_before_have_their_names_derived_by_the_migration(client):
    """A preset stored with no alias (as the admin left them) is found after migration 0011."""
    ModelPreset.objects.create(
        slug="old-admin-preset", display_name="Walk Mistral", family="mistral", config=MISTRAL
    )
    not_found = "No model in the catalogue matches"
    for typed in ("Walk Mistral", "old-admin-preset"):
        assert not_found in client.get("/", {"model": typed}).content.decode()
    migration = importlib.import_module("calculator.migrations.0012_admin_bounds_and_aliases")
    migration.derive_aliases(apps, None)
    aliases = ModelAlias.objects.filter(preset__slug="old-admin-preset")
    assert set(aliases.values_list("alias", flat=True)) == {"old-admin-preset", "Walk Mistral"}
    for typed in ("Walk Mistral", "old-admin-preset"):
        assert not_found not in client.get("/", {"model": typed}).content.decode()


def test_the_clash_message_is_translated():
    admin = admin_client("walk")
    page = admin.get("/de" + ADD)
    data = {**form_fields(page), "slug": "x-qwen", "display_name": "Qwen2 7B", "family": "qwen2"}
    data["config"] = json.dumps(MISTRAL)
    body = admin.post("/de" + ADD, {**data, "_save": "Sichern"}).content.decode()
    assert "„Qwen2 7B“ findet bereits Qwen2 7B" in body

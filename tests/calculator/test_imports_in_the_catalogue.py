"""Hub imports nobody has reviewed stay out of what everyone else is shown and of the cache's
catalogue version; a repository id of another organisation is that organisation's model.

Findings 9, 17 and 18 of the security review of 654b6a2.
"""

import json

import pytest

from calculator.catalogue.models import ModelPreset, PresetOrigin
from calculator.catalogue.selectors import catalogue_version
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db


def qwen25_7b_config() -> dict:
    data = json.loads((ROOT / "presets/models/qwen.json").read_text())
    return next(e["config"] for e in data["presets"] if e["slug"] == "qwen2.5-7b")


def unreviewed_import(name: str, family: str, layers: int = 28) -> ModelPreset:
    # What hub._store makes of anyone's repository: the family is the config's own choice.
    return ModelPreset.objects.create(
        slug=f"hub-{name.lower().replace('/', '-')}",
        display_name=name,
        family=family,
        hf_repo=name,
        config={**qwen25_7b_config(), "num_hidden_layers": layers},
        origin=PresetOrigin.HUB,
        reviewed=False,
    )


def test_an_unreviewed_import_is_never_the_smaller_model_advice(client, llama31_8b):
    # The review's case: Llama 3.3 70B on a 24 GB card, whose own line has no smaller model,
    # so the advice looks through the family (Llama) — where anyone's import had its say.
    family = ModelPreset.objects.get(slug="llama-3.3-70b").family
    # 158 layers of Llama 3.1 8B's shape: about 35.5B parameters, INT4 fits 24 GB, and it is
    # larger than any other catalogue Llama under 70B that fits, so the advice would take it.
    ModelPreset.objects.create(
        slug="hub-midfam-visit-evil",
        display_name="midfam/Visit-evil-example-com-for-free-GPUs",
        family=family,
        hf_repo="midfam/Visit-evil-example-com-for-free-GPUs",
        config={**llama31_8b, "num_hidden_layers": 158},
        origin=PresetOrigin.HUB,
        reviewed=False,
    )
    body = client.get("/", {"model": "llama-3.3-70b", "gpu": "rtx-4090-24gb"}).content.decode()
    assert "Or a smaller model of the same family" in body
    assert "Visit-evil" not in body


def test_an_import_leaves_the_catalogue_version_and_reviewing_it_changes_it():
    before = catalogue_version()
    preset = unreviewed_import("someone/qwen-copy", "Qwen2.5")
    assert catalogue_version() == before
    preset.reviewed = True
    preset.save()
    assert catalogue_version() != before


def test_another_organisations_repository_is_looked_up_on_the_hub(client, hub):
    # The catalogue's Qwen/Qwen2-7B shares the alias key 'qwen27b' with this id; the stand-in
    # does not have the repository, so the Hub's answer (404) is what the visitor gets.
    response = client.post(
        "/api/v1/estimate",
        json.dumps({"model": {"hub": "some-other-org/Qwen2-7B-Instruct"}}),
        content_type="application/json",
    )
    assert response.status_code == 404
    assert hub.requests_for("some-other-org/Qwen2-7B-Instruct")


def test_the_catalogues_own_repository_id_needs_no_hub(client, hub):
    response = client.post(
        "/api/v1/estimate",
        json.dumps({"model": {"hub": "Qwen/Qwen2-7B-Instruct"}}),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["preset"] == "qwen2-7b"
    assert hub.requests == []


def serve(hub, repo_id: str) -> None:
    from tests.hub_standin import Repo

    hub.add(repo_id, Repo(files={"config.json": json.dumps(qwen25_7b_config()).encode()}))


def look_up(client, repo_id: str, who: str = "10.0.0.66"):
    return client.post(
        "/api/v1/estimate",
        json.dumps({"model": {"hub": repo_id}}),
        content_type="application/json",
        REMOTE_ADDR=who,
    )


def test_hub_imports_are_limited_per_client_and_stored_ones_cost_nothing(client, hub, settings):
    # Finding 17: 30 imports from one client in 4 s, no limit.
    settings.HUB_IMPORT_RATE_PER_HOUR = 2
    for name in ("a", "b", "c"):
        serve(hub, f"standin/{name}")
    assert look_up(client, "standin/a").status_code == 200
    assert look_up(client, "standin/b").status_code == 200
    limited = look_up(client, "standin/c")
    assert limited.status_code == 429
    assert "many new models" in limited.json()["errors"][0]["message"]
    assert not hub.requests_for("standin/c")  # refused before any request
    assert look_up(client, "standin/a").status_code == 200  # stored: not counted
    assert look_up(client, "standin/c", who="10.0.0.1").status_code == 200  # someone else


def test_no_more_unreviewed_imports_are_kept_past_the_cap(client, hub, settings):
    settings.HUB_IMPORT_MAX_UNREVIEWED = 1
    serve(hub, "standin/a")
    serve(hub, "standin/b")
    assert look_up(client, "standin/a").status_code == 200
    refused = look_up(client, "standin/b", who="10.0.0.1")
    assert refused.status_code == 429
    assert "until an administrator reviews some" in refused.json()["errors"][0]["message"]
    assert ModelPreset.objects.filter(origin=PresetOrigin.HUB).count() == 1


def test_the_page_says_why_an_import_is_refused(client, hub, settings):
    settings.HUB_IMPORT_RATE_PER_HOUR = 0
    serve(hub, "standin/a")
    body = client.get("/", {"model": "standin/a"}).content.decode()
    assert "many new models on the Hugging Face Hub" in body

"""The preset admin, through the test client: validation, duplicate aliases, config import."""

import json

import pytest
from django.contrib.auth.models import User

from calculator.catalogue.models import ModelPreset
from tests.conftest import load_validation_config

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = User.objects.create_superuser("admin", "admin@example.com", "pw-for-tests-only")
    client.force_login(user)
    return client


def change_form_data(preset: ModelPreset, **overrides) -> dict:
    data = {
        "slug": preset.slug,
        "display_name": preset.display_name,
        "family": preset.family,
        "hf_repo": preset.hf_repo,
        "config": json.dumps(preset.config),
        "native_precision": preset.native_precision,
        "quantization": preset.quantization,
        "license": preset.license,
        "official_params": preset.official_params,
        "source": preset.source,
        "note": preset.note,
        "active": "on",
        "aliases-TOTAL_FORMS": "1",
        "aliases-INITIAL_FORMS": "0",
        "aliases-MIN_NUM_FORMS": "0",
        "aliases-MAX_NUM_FORMS": "1000",
        "aliases-0-alias": "",
    }
    data.update(overrides)
    return data


def test_admin_requires_staff_login(client):
    response = client.get("/admin/calculator/modelpreset/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_admin_list_shows_parameters_layers_and_search_by_alias(staff):
    response = staff.get("/admin/calculator/modelpreset/?q=Qwen/Qwen2-7B-Instruct")
    body = response.content.decode()
    assert response.status_code == 200
    assert "Qwen2 7B" in body
    # Qwen2-7B: 7,615,616,512 parameters from its config (Qwen's config implies 7.62B).
    assert "7.62" in body


def test_broken_config_is_rejected_with_the_reason(staff):
    preset = ModelPreset.objects.get(slug="llama-3.1-8b")
    broken = dict(preset.config)
    del broken["hidden_size"]
    response = staff.post(
        f"/admin/calculator/modelpreset/{preset.pk}/change/",
        change_form_data(preset, config=json.dumps(broken)),
    )
    assert response.status_code == 200  # the form comes back with the error
    assert "hidden_size" in response.content.decode()
    preset.refresh_from_db()
    assert "hidden_size" in preset.config  # nothing saved


def test_duplicate_alias_names_the_other_preset(staff):
    preset = ModelPreset.objects.get(slug="llama-3.1-8b")
    response = staff.post(
        f"/admin/calculator/modelpreset/{preset.pk}/change/",
        change_form_data(preset, **{"aliases-0-alias": "qwen2 7b"}),
    )
    body = response.content.decode()
    assert "is already an alias of Qwen2 7B" in body


def test_import_from_config_prefills_a_preset(staff):
    config = load_validation_config("qwen3-0.6b")
    response = staff.post(
        "/admin/calculator/modelpreset/import-config/",
        {"config_text": json.dumps(config), "hf_repo": "Qwen/Qwen3-0.6B-Custom"},
    )
    assert response.status_code == 302
    add_page = staff.get(response["Location"])
    body = add_page.content.decode()
    assert "Qwen3 0.6B Custom" in body
    assert "qwen3-0-6b-custom" in body
    assert "Qwen/Qwen3-0.6B-Custom" in body


def test_import_shows_validation_errors_inline(staff):
    response = staff.post(
        "/admin/calculator/modelpreset/import-config/",
        {"config_text": json.dumps({"model_type": "llama", "hidden_size": 64})},
    )
    assert response.status_code == 200
    assert "The estimator cannot use this config" in response.content.decode()


def test_gpu_admin_lists_and_edits_the_performance_figures(staff):
    from calculator.catalogue.models import GpuSpec

    listing = staff.get("/admin/calculator/gpuspec/?interconnect__exact=nvlink").content.decode()
    assert "Dense FP8 TFLOPS" in listing  # the admin capitalises column headers
    assert "Interconnect bandwidth" in listing
    assert "NVIDIA H100 SXM 80GB" in listing
    assert "NVIDIA L40S" not in listing  # PCIe cards are filtered out
    gpu = GpuSpec.objects.get(slug="h100-sxm-80gb")
    form = staff.get(f"/admin/calculator/gpuspec/{gpu.pk}/change/").content.decode()
    for name in ("fp8_tflops_dense", "int8_tops_dense", "interconnect", "interconnect_gb_s"):
        assert f'name="{name}"' in form

"""Every GPU figure an admin edits is bounded, and a row holding a bad figure anyway does not
break the pages (issue 25, walkthrough section 6, defect 2: a negative bandwidth made every
page and /fits/ with that GPU answer 500)."""

import json
import logging

import pytest
from django.utils import timezone

from calculator.catalogue.models import GpuSpec
from tests.calculator.test_admin_conflicts import admin_client, gpu_url, save
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db

GPUS = json.loads((ROOT / "presets" / "gpus.json").read_text())["gpus"]
FIGURES = (
    "memory_gb",
    "usable_memory_bytes",
    "bandwidth_gb_s",
    "bf16_tflops_dense",
    "fp16_tflops_dense",
    "fp8_tflops_dense",
    "int8_tops_dense",
    "interconnect_gb_s",
    "unified_usable_fraction",
    "release_year",
)


def largest(name: str) -> float:
    return max(float(gpu[name]) for gpu in GPUS if gpu.get(name) is not None)


@pytest.mark.parametrize("name", FIGURES)
def test_a_negative_figure_is_refused_next_to_its_field(name):
    admin = admin_client("walk")
    url = gpu_url("rtx-3060-12gb")
    response = save(admin, url, admin.get(url), **{name: "-360"})
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to" in response.content.decode()
    gpu = GpuSpec.objects.get(slug="rtx-3060-12gb")
    assert getattr(gpu, name) != -360


@pytest.mark.parametrize(
    "name", [name for name in FIGURES if name not in ("release_year", "usable_memory_bytes")]
)
def test_a_figure_past_eleven_times_the_largest_published_one_is_refused(name):
    """The largest figures are the published specs in presets/gpus.json (B200, M3 Ultra)."""
    admin = admin_client("walk")
    url = gpu_url("rtx-3060-12gb")
    too_large = 11 * largest(name) if name != "unified_usable_fraction" else 1.5
    response = save(admin, url, admin.get(url), **{name: str(too_large)})
    assert response.status_code == 200
    assert "Ensure this value is less than or equal to" in response.content.decode()


def test_every_published_gpu_is_within_the_bounds():
    for gpu in GpuSpec.objects.all():
        gpu.full_clean()


def test_a_driver_figure_over_the_marketed_memory_is_refused():
    """The RTX 3060 is marketed with 12 GB; 13 GiB cannot be what its driver reports."""
    admin = admin_client("walk")
    url = gpu_url("rtx-3060-12gb")
    response = save(admin, url, admin.get(url), usable_memory_bytes=str(13 * 2**30))
    assert "A driver cannot report more than the marketed 12 GB" in response.content.decode()
    assert GpuSpec.objects.get(slug="rtx-3060-12gb").usable_memory_bytes is None


def test_a_negative_bandwidth_saved_in_the_admin_breaks_nothing(client):
    """The walkthrough's step: bandwidth -360 GB/s on the RTX 3060, then the public pages."""
    admin = admin_client("walk")
    url = gpu_url("rtx-3060-12gb")
    save(admin, url, admin.get(url), bandwidth_gb_s="-360")
    for path in ("/?gpu=rtx-3060-12gb", "/fits/?gpu=rtx-3060-12gb"):
        assert client.get(path).status_code == 200, path


def written_past_the_admin(**values) -> None:
    """A row changed by SQL, as a script or a bad fixture would: no validator runs."""
    GpuSpec.objects.filter(slug="rtx-3060-12gb").update(**values, updated_at=timezone.now())


@pytest.mark.parametrize(
    "values",
    [
        {"bandwidth_gb_s": -360.0},
        {
            "bandwidth_gb_s": 360.0,
            "bf16_tflops_dense": -1.0,
            "fp16_tflops_dense": 0.0,
            "int8_tops_dense": -5.0,
            "interconnect_gb_s": -64.0,
            "interconnect": "warp-drive",
            "usable_memory_bytes": -12,
        },
        {"usable_memory_bytes": 10**18},
    ],
)
def test_a_bad_figure_written_past_the_admin_is_ignored_not_a_500(client, caplog, values):
    written_past_the_admin(**values)
    with caplog.at_level(logging.WARNING, logger="calculator.catalogue.selectors"):
        for path in (
            "/?gpu=rtx-3060-12gb",
            "/?gpu=rtx-3060-12gb&part=more",
            "/?gpu=rtx-3060-12gb&runtime=vllm",
            "/?gpu=rtx-3060-12gb&mode=full_finetune&gpus=2",
            "/fits/?gpu=rtx-3060-12gb",
            "/api/v1/estimate?gpu=rtx-3060-12gb",
            "/api/v1/gpus",
        ):
            assert client.get(path).status_code == 200, path
        partial = client.get("/?gpu=rtx-3060-12gb", HTTP_HX_REQUEST="true")
        assert partial.status_code == 200
        api = client.post(
            "/api/v1/estimate",
            {"model": {"preset": "llama-3.1-8b"}, "seq_len": 4096, "gpu": "rtx-3060-12gb"},
            content_type="application/json",
        )
    assert api.status_code == 200, api.content
    assert "rtx-3060-12gb" in caplog.text
    # 12 GB marketed (presets/gpus.json); a driver figure out of bounds falls back to 98.5%.
    assert api.json()["verdict"]["usable_bytes"] == int(12 * 2**30 * 0.985)


def test_a_gpu_whose_memory_is_out_of_bounds_is_left_out(client):
    written_past_the_admin(memory_gb=-12)
    assert client.get("/?gpu=rtx-3060-12gb").status_code == 200
    assert client.get("/fits/?gpu=rtx-3060-12gb").status_code == 200
    listed = [gpu["slug"] for gpu in client.get("/api/v1/gpus").json()]
    assert "rtx-3060-12gb" not in listed
    api = client.post(
        "/api/v1/estimate",
        {"model": {"preset": "llama-3.1-8b"}, "gpu": "rtx-3060-12gb", "runtime": "vllm"},
        content_type="application/json",
    )
    assert api.status_code == 404

"""Models named by a Hugging Face Hub repository id, against a local Hub stand-in (no network).

The stand-in (tests/hub_standin.py) serves published config.json files committed in this
repository under repository ids the catalogue does not know:

- ``standin/qwen2.5-0.5b-copy``: Qwen/Qwen2.5-0.5B's published config.json
  (validation/configs/qwen2.5-0.5b.json, provenance in validation/configs/SOURCES.md). Expected
  parameters 494,032,768: transformers' own meta-device count of that config
  (tests/estimator/data/transformers_param_counts.json, "qwen2.5-0.5b").
- ``standin/gpt-oss-20b-copy``: openai/gpt-oss-20b's published config.json (presets/models/
  gpt_oss.json, an MXFP4 pre-quantized release), to check that the stored dtypes are recorded.
"""

import io
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from calculator.catalogue.hub import HubError, hub_model_import, hub_repo_id, stored_weight_bytes
from calculator.catalogue.models import ModelPreset, PresetOrigin
from tests.conftest import ROOT, closed_port, load_validation_config
from tests.hub_standin import Repo, safetensors_file

pytestmark = pytest.mark.django_db

QWEN_COPY = "standin/qwen2.5-0.5b-copy"
GPT_OSS_COPY = "standin/gpt-oss-20b-copy"
# transformers 5.24 on the meta device (tests/estimator/data/transformers_param_counts.json).
QWEN25_05B_PARAMS = json.loads(
    (ROOT / "tests/estimator/data/transformers_param_counts.json").read_text()
)["models"]["qwen2.5-0.5b"]["params_total"]


def published_gpt_oss_20b() -> dict:
    data = json.loads((ROOT / "presets/models/gpt_oss.json").read_text())
    return next(e["config"] for e in data["presets"] if e["slug"] == "gpt-oss-20b")


def serve_qwen(hub, repo_id=QWEN_COPY, **kwargs) -> Repo:
    config = json.dumps(load_validation_config("qwen2.5-0.5b")).encode()
    # The Hub's safetensors summary for this stand-in: every parameter stored once in BF16.
    kwargs.setdefault("safetensors", {"BF16": QWEN25_05B_PARAMS})
    return hub.add(repo_id, Repo(files={"config.json": config}, **kwargs))


def post(client, body):
    return client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")


def test_qwen_param_count_comes_from_the_published_dataset():
    assert QWEN25_05B_PARAMS == 494_032_768


# --- what counts as a repository id ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "repo_id"),
    [
        ("microsoft/phi-2", "microsoft/phi-2"),
        ("https://huggingface.co/microsoft/phi-2", "microsoft/phi-2"),
        ("https://huggingface.co/microsoft/phi-2/tree/main", "microsoft/phi-2"),
        ("huggingface.co/microsoft/phi-2/blob/main/config.json", "microsoft/phi-2"),
        ("https://hf.co/microsoft/phi-2?library=transformers", "microsoft/phi-2"),
        ("Llama 3.1 8B", None),
        ("qwen2-7b", None),
        ("https://example.com/microsoft/phi-2", None),
    ],
)
def test_hub_repo_id(text, repo_id):
    assert hub_repo_id(text) == repo_id


@pytest.mark.parametrize(
    "text", ["https://huggingface.co/datasets/org/data", "org/na--me", "https://huggingface.co/x"]
)
def test_hub_repo_id_rejects_what_is_not_a_model_repository(text):
    with pytest.raises(HubError) as error:
        hub_repo_id(text)
    assert error.value.kind == "invalid"


# --- the service -----------------------------------------------------------------------------


def test_import_stores_an_unreviewed_preset_with_the_exact_count(hub):
    repo = serve_qwen(hub)
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.params_total == QWEN25_05B_PARAMS
    assert preset.origin == PresetOrigin.HUB
    assert preset.reviewed is False
    assert preset.hf_repo == QWEN_COPY
    assert preset.hub_revision == repo.sha
    assert preset.hub_params_total == QWEN25_05B_PARAMS
    assert preset.hub_dtypes == {"BF16": QWEN25_05B_PARAMS}
    assert [a.alias for a in preset.aliases.all()] == [QWEN_COPY]
    # config.json is read at the commit the model info named.
    assert ("GET", f"/{QWEN_COPY}/resolve/{repo.sha}/config.json") in hub.requests


def test_second_lookup_uses_the_stored_preset(hub):
    serve_qwen(hub)
    first = hub_model_import(repo_id=QWEN_COPY)
    seen = len(hub.requests)
    again = hub_model_import(repo_id=QWEN_COPY.upper())
    assert again.pk == first.pk
    assert len(hub.requests) == seen
    assert ModelPreset.objects.filter(hf_repo__iexact=QWEN_COPY).count() == 1


def test_dtypes_are_read_from_safetensors_headers_without_the_hub_summary(hub):
    # Two tensors, shapes chosen here: BF16 [4, 8] = 32 elements, F32 [8] = 8 elements.
    weights = safetensors_file(
        {"model.embed_tokens.weight": ("BF16", [4, 8]), "model.norm.weight": ("F32", [8])}
    )
    repo = serve_qwen(hub, safetensors=None)
    repo.files["model.safetensors"] = weights
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.hub_dtypes == {"BF16": 32, "F32": 8}
    assert preset.hub_params_total == 40
    # The header was read with a range request, as huggingface_hub does.
    assert ("GET", f"/{QWEN_COPY}/resolve/{repo.sha}/model.safetensors") in hub.requests


def test_sharded_safetensors_headers_are_summed(hub):
    repo = serve_qwen(hub, safetensors=None)
    repo.files["model-00001-of-00002.safetensors"] = safetensors_file({"a": ("BF16", [3, 5])})
    repo.files["model-00002-of-00002.safetensors"] = safetensors_file({"b": ("BF16", [7])})
    repo.files["model.safetensors.index.json"] = json.dumps(
        {
            "metadata": {"total_size": 44},
            "weight_map": {
                "a": "model-00001-of-00002.safetensors",
                "b": "model-00002-of-00002.safetensors",
            },
        }
    ).encode()
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.hub_dtypes == {"BF16": 15 + 7}


def test_no_safetensors_at_all_still_imports(hub):
    serve_qwen(hub, safetensors=None)
    preset = hub_model_import(repo_id=QWEN_COPY)
    assert preset.hub_params_total is None
    assert preset.hub_dtypes == {}
    assert preset.params_total == QWEN25_05B_PARAMS


def test_pre_quantized_checkpoint_records_its_stored_dtypes(hub):
    # Stand-in summary (test input, not a published figure): 1,000 BF16 elements, 3,000 U8
    # (MXFP4 blocks) and 100 U8 scales.
    hub.add(
        GPT_OSS_COPY,
        Repo(
            files={"config.json": json.dumps(published_gpt_oss_20b()).encode()},
            safetensors={"BF16": 1_000, "U8": 3_100},
        ),
    )
    preset = hub_model_import(repo_id=GPT_OSS_COPY)
    assert preset.quantization == "mxfp4"
    assert preset.native_precision == "mxfp4"
    assert preset.hub_dtypes == {"BF16": 1_000, "U8": 3_100}
    # 1,000 × 2 bytes + 3,100 × 1 byte (safetensors dtype sizes).
    assert stored_weight_bytes(preset.hub_dtypes) == 5_100


@pytest.mark.parametrize(
    ("files", "kind", "words"),
    [
        ({}, "malformed", "has no config.json"),
        ({"config.json": b"{not json"}, "malformed", "not a JSON object"),
        ({"config.json": b"[1, 2]"}, "malformed", "not a JSON object"),
        ({"config.json": b'{"model_type": "llama"}'}, "malformed", "cannot be used"),
    ],
)
def test_malformed_repositories(hub, files, kind, words):
    hub.add("standin/broken", Repo(files=files))
    with pytest.raises(HubError) as error:
        hub_model_import(repo_id="standin/broken")
    assert error.value.kind == kind
    assert words in error.value.message
    assert not ModelPreset.objects.filter(hf_repo="standin/broken").exists()


def test_gated_repository(hub):
    serve_qwen(hub, repo_id="standin/gated", gated=True)
    with pytest.raises(HubError) as error:
        hub_model_import(repo_id="standin/gated")
    assert error.value.kind == "gated"
    assert "gated" in error.value.message


def test_token_from_hf_token_is_sent(hub, monkeypatch):
    serve_qwen(hub, repo_id="standin/gated", gated=True)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
    preset = hub_model_import(repo_id="standin/gated")
    assert preset.params_total == QWEN25_05B_PARAMS


def test_missing_repository(hub):
    with pytest.raises(HubError) as error:
        hub_model_import(repo_id="standin/nothing-here")
    assert error.value.kind == "missing"


def test_offline_hub(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(HubError) as error:
        hub_model_import(repo_id="standin/anything")
    assert error.value.kind == "offline"
    assert "could not be reached" in error.value.message


# --- page, API, CLI --------------------------------------------------------------------------


def test_page_resolves_a_hub_id(client, hub):
    serve_qwen(hub)
    response = client.get("/", {"model": QWEN_COPY})
    assert response.status_code == 200
    html = response.content.decode()
    assert "from the Hugging Face Hub, not reviewed" in html
    assert "0.49B parameters" in html  # 494,032,768 rounded to two decimals


def test_page_resolves_a_hub_url_then_serves_the_stored_row(client, hub):
    serve_qwen(hub)
    assert (
        client.get("/", {"model": f"https://huggingface.co/{QWEN_COPY}/tree/main"}).status_code
        == 200
    )
    seen = len(hub.requests)
    response = client.get("/", {"model": QWEN_COPY, "seq": "2048"})
    assert "not reviewed" in response.content.decode()
    assert len(hub.requests) == seen


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("offline", "could not be reached"),
        ("missing", "No model “standin/nothing-here” on the Hugging Face Hub"),
        ("gated", "is a gated model"),
        ("malformed", "is not a JSON object"),
    ],
)
def test_page_shows_hub_failures_next_to_the_model_field(client, hub, monkeypatch, setup, message):
    repo_id = {"missing": "standin/nothing-here"}.get(setup, "standin/case")
    if setup == "offline":
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    elif setup == "gated":
        serve_qwen(hub, repo_id=repo_id, gated=True)
    elif setup == "malformed":
        hub.add(repo_id, Repo(files={"config.json": b"{"}))
    response = client.get("/", {"model": repo_id}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    errors = re.search(r'id="errors_model"[^>]*>(.*?)</div>', response.content.decode(), re.S)
    assert errors is not None
    assert message in errors.group(1)
    assert response["Cache-Control"] == "no-store"


def test_hub_failure_is_not_cached_for_the_next_visit(client, hub):
    hub.add("standin/late", Repo(files={}))
    first = client.get("/", {"model": "standin/late"})
    assert "has no config.json" in first.content.decode()
    serve_qwen(hub, repo_id="standin/late")
    second = client.get("/", {"model": "standin/late"})
    assert "not reviewed" in second.content.decode()


def test_catalogue_names_do_not_reach_the_hub(client, hub):
    for name in ("Llama 3.1 8B", "Qwen/Qwen2-7B-Instruct", "https://huggingface.co/Qwen/Qwen2-7B"):
        assert client.get("/", {"model": name}).status_code == 200
    assert hub.requests == []


def test_unreviewed_imports_stay_out_of_the_catalogue(client, hub):
    serve_qwen(hub)
    hub_model_import(repo_id=QWEN_COPY)
    listed = client.get("/api/v1/models", {"q": "qwen2.5-0.5b-copy"}).json()
    assert listed["count"] == 0
    suggestions = client.get("/suggest", {"model": "qwen2.5 0.5b copy"}).content.decode()
    assert QWEN_COPY not in suggestions


def test_api_post_with_a_hub_model(client, hub):
    repo = serve_qwen(hub)
    response = post(client, {"model": {"hub": QWEN_COPY}})
    assert response.status_code == 200
    body = response.json()
    assert body["params_total"] == QWEN25_05B_PARAMS
    assert body["preset"] == "hub-standin-qwen2.5-0.5b-copy"
    assert body["hub"] == {
        "repo_id": QWEN_COPY,
        "revision": repo.sha,
        "reviewed": False,
        "params_stored": QWEN25_05B_PARAMS,
        "dtypes": {"BF16": QWEN25_05B_PARAMS},
        # Every parameter in BF16: 2 bytes each (hand calculation).
        "stored_weight_bytes": 2 * QWEN25_05B_PARAMS,
    }
    seen = len(hub.requests)
    assert post(client, {"model": {"hub": QWEN_COPY}}).status_code == 200
    assert len(hub.requests) == seen


def test_api_permalink_with_a_hub_id(client, hub):
    serve_qwen(hub)
    response = client.get("/api/v1/estimate", {"model": QWEN_COPY})
    assert response.status_code == 200
    assert response.json()["params_total"] == QWEN25_05B_PARAMS


@pytest.mark.parametrize(
    ("repo_id", "status"),
    [
        ("standin/gated", 403),
        ("standin/nothing-here", 404),
        ("standin/broken", 422),
        ("not a repo id", 422),
    ],
)
def test_api_hub_errors_are_4xx_json(client, hub, repo_id, status):
    serve_qwen(hub, repo_id="standin/gated", gated=True)
    hub.add("standin/broken", Repo(files={"config.json": b"{oops"}))
    response = post(client, {"model": {"hub": repo_id}})
    assert response.status_code == status
    assert response.json()["errors"][0]["field"] == "model.hub"


def test_api_offline_hub(client, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    response = post(client, {"model": {"hub": "standin/anything"}})
    assert response.status_code == 424
    assert "could not be reached" in response.json()["errors"][0]["message"]
    permalink = client.get("/api/v1/estimate", {"model": "standin/anything"})
    assert permalink.status_code == 424
    assert permalink.json()["errors"][0]["field"] == "model"


def test_cli_with_a_hub_model(tmp_path, hub):
    serve_qwen(hub)
    path = Path(tmp_path) / "request.json"
    path.write_text(json.dumps({"model": {"hub": f"https://huggingface.co/{QWEN_COPY}"}}))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    assert json.loads(out.getvalue())["params_total"] == QWEN25_05B_PARAMS


def test_cli_hub_failure_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    path = Path(tmp_path) / "request.json"
    path.write_text(json.dumps([{"model": {"hub": "standin/anything"}}]))
    err = io.StringIO()
    with pytest.raises(CommandError) as error:
        call_command("estimate", "--json", str(path), stdout=io.StringIO(), stderr=err)
    assert error.value.returncode == 2
    assert err.getvalue().startswith("[0].model.hub: ")
    assert "could not be reached" in err.getvalue()


# --- admin -----------------------------------------------------------------------------------


@pytest.fixture
def staff(client):
    user = User.objects.create_superuser("admin", "admin@example.com", "pw-for-tests-only")
    client.force_login(user)
    return client


def test_admin_lists_the_import_with_its_marker_and_promotes_it(staff, hub):
    serve_qwen(hub)
    preset = hub_model_import(repo_id=QWEN_COPY)
    listing = staff.get("/admin/calculator/modelpreset/", {"reviewed__exact": "0"})
    html = listing.content.decode()
    assert QWEN_COPY in html
    assert "imported, not reviewed" in html
    assert html.count("imported, not reviewed") == 1  # curated presets carry no marker
    response = staff.post(
        "/admin/calculator/modelpreset/",
        {"action": "mark_reviewed", "_selected_action": [preset.pk]},
        follow=True,
    )
    assert "Models marked as reviewed: 1." in response.content.decode()
    preset.refresh_from_db()
    assert preset.reviewed is True
    # Reviewed, it is part of the catalogue: its name now resolves like any alias.
    assert staff.get("/api/v1/models", {"q": "qwen2.5-0.5b-copy"}).json()["count"] == 1


def test_admin_can_edit_and_delete_an_import(staff, hub):
    serve_qwen(hub)
    preset = hub_model_import(repo_id=QWEN_COPY)
    change = staff.get(f"/admin/calculator/modelpreset/{preset.pk}/change/")
    assert change.status_code == 200
    assert "parameters stored (safetensors)" in change.content.decode().lower()
    staff.post(f"/admin/calculator/modelpreset/{preset.pk}/delete/", {"post": "yes"})
    assert not ModelPreset.objects.filter(pk=preset.pk).exists()


def test_hub_messages_are_translated(client, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    german = client.get("/de/", {"model": "standin/anything"}).content.decode()
    assert "Der Hugging Face Hub war nicht erreichbar" in german


def test_a_withdrawn_import_is_not_fetched_again(client, hub):
    serve_qwen(hub)
    preset = hub_model_import(repo_id=QWEN_COPY)
    ModelPreset.objects.filter(pk=preset.pk).update(active=False)
    seen = len(hub.requests)
    response = post(client, {"model": {"hub": QWEN_COPY}})
    assert response.status_code == 404
    assert "withdrawn" in response.json()["errors"][0]["message"]
    assert len(hub.requests) == seen


# --- a pre-quantized checkpoint weighs what it stores ----------------------------------------

AWQ_COPY = "standin/mistral-7b-awq-copy"
# The quantization_config TheBloke/zephyr-7B-alpha-AWQ publishes (a Mistral 7B fine-tune), as
# transformers' AWQ guide quotes it (docs/source/en/quantization/awq.md).
AWQ_QUANTIZATION = {
    "quant_method": "awq",
    "zero_point": True,
    "group_size": 128,
    "bits": 4,
    "version": "gemm",
}


def mistral_7b_awq_config() -> dict:
    """mistralai/Mistral-7B-v0.1's published config.json (presets/models/mistral.json) with the
    AWQ quantization_config above."""
    data = json.loads((ROOT / "presets/models/mistral.json").read_text())
    config = next(e["config"] for e in data["presets"] if e["slug"] == "mistral-7b-v0.1")
    return {**config, "quantization_config": AWQ_QUANTIZATION}


def mistral_7b_awq_dtypes() -> dict[str, int]:
    """The safetensors summary of that checkpoint, by hand from the config's shapes and the AWQ
    GEMM layout (vLLM awq.py create_weights: qweight int32 [in, out / 8], qzeros int32
    [in / 128, out / 8], scales fp16 [in / 128, out]); embeddings, LM head and norms in fp16.
    Per layer, in × out over q 4096², k and v 4096 × 1024, o 4096², gate and up 4096 × 14336,
    down 14336 × 4096: 4096 × 38912 + 14336 × 4096 = 218,103,808."""
    per_layer = 4096 * (4096 + 1024 + 1024 + 4096 + 14336 + 14336) + 14336 * 4096
    assert per_layer == 218_103_808
    int32 = 32 * (per_layer // 8 + per_layer // 128 // 8)  # qweight + qzeros
    fp16 = 32 * (per_layer // 128) + 2 * 32000 * 4096 + 32 * 2 * 4096 + 4096
    assert (int32, fp16) == (879_230_976, 316_936_192)
    return {"I32": int32, "F16": fp16}


# 879,230,976 × 4 bytes + 316,936,192 × 2 bytes (safetensors dtype sizes).
MISTRAL_7B_AWQ_BYTES = 4_150_796_288
# Mistral 7B's logical parameter count: 32 × (2 × 4096² + 2 × 4096 × 1024 + 3 × 4096 × 14336
# + 2 × 4096) + 2 × 32000 × 4096 + 4096.
MISTRAL_7B_PARAMS = 7_241_732_096


def serve_mistral_awq(hub) -> Repo:
    config = json.dumps(mistral_7b_awq_config()).encode()
    return hub.add(
        AWQ_COPY, Repo(files={"config.json": config}, safetensors=mistral_7b_awq_dtypes())
    )


def test_awq_hand_calculation():
    dtypes = mistral_7b_awq_dtypes()
    assert 4 * dtypes["I32"] + 2 * dtypes["F16"] == MISTRAL_7B_AWQ_BYTES
    per_layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert 32 * per_layer + 2 * 32000 * 4096 + 4096 == MISTRAL_7B_PARAMS


def test_pre_quantized_checkpoint_weighs_its_stored_bytes_on_page_api_and_cli(
    client, hub, tmp_path
):
    serve_mistral_awq(hub)
    page = client.get("/", {"model": AWQ_COPY, "precision": "int4", "format": "json"}).json()
    api = post(client, {"model": {"hub": AWQ_COPY}, "precision": "int4"}).json()
    path = Path(tmp_path) / "request.json"
    path.write_text(json.dumps({"model": {"hub": AWQ_COPY}, "precision": "int4"}))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    cli = json.loads(out.getvalue())
    for body in (page, api, cli):
        assert body["breakdown"]["weights"] == MISTRAL_7B_AWQ_BYTES
        assert body["breakdown"]["quantization_overhead"] == 0  # the scales are in the bytes
        assert body["checkpoint_weight_bytes"] == MISTRAL_7B_AWQ_BYTES
        # The packed elements (1.2 B) are not the model's parameters.
        assert body["params_total"] == MISTRAL_7B_PARAMS
    assert api["hub"]["stored_weight_bytes"] == MISTRAL_7B_AWQ_BYTES
    assert api["hub"]["params_stored"] == 879_230_976 + 316_936_192
    assert api["total_bytes"] == cli["total_bytes"]  # same defaults (the page has its own)
    html = client.get("/", {"model": AWQ_COPY, "precision": "int4"}).content.decode()
    assert "= 4,150,796,288 bytes as the checkpoint stores them" in html


def test_lora_on_a_pre_quantized_checkpoint_freezes_its_stored_bytes(client, hub):
    """PEFT adapters over the AWQ checkpoint: the frozen base is what the files store, as for
    inference; QLoRA (NF4 from a full-precision checkpoint) and bf16 LoRA keep their formats."""
    serve_mistral_awq(hub)
    lora = post(client, {"model": {"hub": AWQ_COPY}, "mode": "lora", "precision": "int4"})
    assert lora.status_code == 200, lora.content
    body = lora.json()
    assert body["breakdown"]["weights"] == MISTRAL_7B_AWQ_BYTES
    assert body["breakdown"]["quantization_overhead"] == 0
    assert body["checkpoint_weight_bytes"] == MISTRAL_7B_AWQ_BYTES
    assert body["params_total"] == MISTRAL_7B_PARAMS
    for other in ({"mode": "lora", "precision": "bf16"}, {"mode": "qlora"}):
        body = post(client, {"model": {"hub": AWQ_COPY}, **other}).json()
        assert body["checkpoint_weight_bytes"] is None


def test_stored_bytes_apply_only_in_the_checkpoints_own_format(client, hub):
    serve_mistral_awq(hub)
    body = post(client, {"model": {"hub": AWQ_COPY}, "precision": "bf16"}).json()
    assert body["checkpoint_weight_bytes"] is None
    assert body["breakdown"]["weights"] == 2 * MISTRAL_7B_PARAMS
    # vLLM reads the checkpoint's format unless told otherwise: the stored bytes, plus the
    # rotary cos/sin cache vLLM keeps (32768 positions × 128 × 2 bytes); the vocabulary (32000)
    # is already a multiple of 64.
    served = post(client, {"model": {"hub": AWQ_COPY}, "runtime": "vllm", "gpu": "h100-sxm-80gb"})
    assert served.status_code == 200, served.content
    assert served.json()["breakdown"]["weights"] == MISTRAL_7B_AWQ_BYTES + 32768 * 128 * 2

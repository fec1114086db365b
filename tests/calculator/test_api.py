"""The JSON API through the test client: every endpoint, and the same numbers as the page."""

import json

import pytest

pytestmark = pytest.mark.django_db


def post(client, body):
    return client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")


def test_post_estimate_with_a_preset_and_a_gpu(client):
    response = post(client, {"model": {"preset": "Qwen/Qwen2-7B-Instruct"}, "gpu": "h100-sxm-80gb"})
    assert response.status_code == 200
    body = response.json()
    assert body["preset"] == "qwen2-7b"
    # Qwen2-7B's config implies 7,615,616,512 parameters (../shared/data/model_configs.json).
    assert body["params_total"] == 7_615_616_512
    assert body["verdict"]["fits"] is True
    assert body["total_bytes"] == sum(body["breakdown"].values())


def test_post_estimate_with_a_custom_model(client):
    # 7e9 parameters × 2 bytes (bf16), a hand calculation.
    response = post(client, {"model": {"params_billion": 7}})
    assert response.status_code == 200
    assert response.json()["breakdown"]["weights"] == 14_000_000_000


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"model": {"preset": "no-such-model"}}, 404, "model"),
        ({"model": {"params_billion": 7}, "gpu": "no-such-gpu"}, 404, "gpu"),
        ({"model": {"params_billion": 7}, "batch_size": -1}, 422, "batch_size"),
        ({"model": {"params_billion": 1e18}}, 422, "model.params_billion"),
        ({"model": {"params_billion": 7}, "seq_len": 10**12}, 422, "seq_len"),
        ({"model": {"params_billion": 7}, "num_gpus": 10**6}, 422, "num_gpus"),
        ({"model": {"config": {"model_type": "llama"}}}, 422, "model.config.hidden_size"),
        ({"model": {"params_billion": 7}, "mode": "full_finetune", "precision": "int4"}, 422, ""),
    ],
)
def test_bad_requests_get_a_4xx_naming_the_field(client, body, status, field):
    response = post(client, body)
    assert response.status_code == status
    errors = response.json()["errors"]
    assert errors
    assert any(error["field"] == field for error in errors), errors


@pytest.mark.parametrize(
    ("body", "field"),
    [
        # pydantic's location says model → custom (the union's branch), the body has no "custom".
        ({"model": {"params_billion": 7, "num_experts": 8}}, "model"),
        ({"model": {"preset": 5}}, "model.preset"),
        ({"model": {"config": 3}}, "model.config"),
        # A config.json key that happens to be named like django-ninja's "body" prefix.
        (
            {"model": {"config": {}, "checkpoint_dtypes": {"body": "x"}}},
            "model.checkpoint_dtypes.body",
        ),
        # 32 query heads cannot share 5 KV heads; the custom shape's key, not a config.json's.
        (
            {
                "model": {
                    "num_layers": 2,
                    "hidden_size": 4096,
                    "num_attention_heads": 32,
                    "num_kv_heads": 5,
                }
            },
            "model.num_kv_heads",
        ),
        # Qwen2-7B has 28 layers (its config.json): 32 pipeline stages cannot split them.
        (
            {
                "model": {"preset": "qwen2-7b"},
                "mode": "pretrain",
                "num_gpus": 32,
                "pipeline_parallel": 32,
            },
            "pipeline_parallel",
        ),
        # A GPU slug that contains the word "preset" is still the GPU's fault.
        ({"model": {"params_billion": 7}, "gpu": "preset-gpu"}, "gpu"),
    ],
)
def test_error_fields_are_paths_of_the_request_body(client, body, field):
    response = post(client, body)
    assert 400 <= response.status_code < 500
    assert [error["field"] for error in response.json()["errors"]] == [field]


def test_malformed_json_is_a_400(client):
    response = client.post("/api/v1/estimate", "{nope", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"]


def test_oversized_body_is_refused(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {"model": {"config": {"model_type": "llama", "padding": "x" * 5000}}}
    response = post(client, body)
    assert response.status_code == 413


@pytest.mark.parametrize(
    "query",
    [
        "model=qwen2-7B",
        "model=Llama+3.1+8B&mode=lora&batch=4&seq=1024&gpu=a100-sxm-80gb",
        "model=Mixtral+8x7B&mode=qlora&lora_targets=all-linear",
        "model=gpt2&mode=full_finetune&precision=fp32&optimizer=sgd_momentum&ckpt=on",
        "source=custom&params=13&layers=40&hidden=5120&mode=inference&precision=int4&kv=fp8",
        "model=Llama+3.1+70B&mode=full_finetune&mixed=on&gpus=8&zero=3",
    ],
)
def test_api_numbers_equal_the_page_for_the_same_permalink(client, query):
    api = client.get("/api/v1/estimate?" + query)
    page = client.get("/?" + query + "&format=json")
    assert api.status_code == page.status_code == 200
    api_body, page_body = api.json(), page.json()
    assert api_body["breakdown"] == page_body["breakdown"]
    assert api_body["total_bytes"] == page_body["total_bytes"]
    assert api_body["peak_allocated_bytes"] == page_body["peak_allocated_bytes"]


def test_get_estimate_reports_form_errors_by_field(client):
    response = client.get("/api/v1/estimate?batch=0")
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "batch"


def test_get_estimate_reads_empty_keys_as_the_defaults(client):
    # The OpenAPI says every key is optional with the page's defaults: a key sent empty
    # (schemathesis sends them all) is the same request as one left out.
    empty = (
        "source=&model=&mode=&precision=&optimizer=&batch=&seq=&attn=&lora_rank="
        "&lora_targets=&gpus=&zero=&tp="
    )
    response = client.get("/api/v1/estimate?" + empty)
    assert response.status_code == 200, response.json()
    assert response.json() == client.get("/api/v1/estimate").json()


def test_get_estimate_keeps_empty_values_that_mean_something(client):
    # An empty gpu asks for no GPU (no verdict), as on the page; left out, the page's GPU applies.
    assert client.get("/api/v1/estimate?gpu=").json()["verdict"] is None
    assert client.get("/api/v1/estimate").json()["verdict"] is not None


def test_the_page_still_refuses_an_emptied_field(client):
    # The visitor cleared the field: the page says so instead of quietly using the default.
    response = client.get("/?seq=")
    assert "Enter a whole number." in response.content.decode()


def test_models_search_and_paging(client):
    first = client.get("/api/v1/models?q=qwen&page_size=5").json()
    second = client.get("/api/v1/models?q=qwen&page_size=5&page=2").json()
    assert first["count"] > 5
    assert len(first["results"]) == 5
    assert {m["slug"] for m in first["results"]}.isdisjoint({m["slug"] for m in second["results"]})
    assert all("qwen" in m["slug"] for m in first["results"])


def test_gpus_lists_the_catalogue(client):
    gpus = client.get("/api/v1/gpus").json()
    assert len(gpus) >= 35
    h100 = next(g for g in gpus if g["slug"] == "h100-sxm-80gb")
    # nvidia-smi reports 81,559 MiB on an H100 SXM 80GB (presets/GPUS_SOURCES.md).
    assert h100["usable_bytes"] == 81_559 * 2**20


def test_openapi_description_and_docs_are_served(client):
    spec = client.get("/api/v1/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    request_schema = spec["components"]["schemas"]["ApiEstimateRequest"]
    assert "Sequences per GPU." in json.dumps(request_schema)  # from the pydantic Field
    assert client.get("/api/v1/docs").status_code == 200


def test_cors_is_off_by_default(client):
    response = client.get("/api/v1/gpus", HTTP_ORIGIN="https://elsewhere.example")
    assert "Access-Control-Allow-Origin" not in response.headers


def test_a_nul_character_in_the_model_search_is_a_422_not_a_500(client):
    # PostgreSQL refuses NUL in text parameters; found by schemathesis under make test-services.
    response = client.get("/api/v1/models", {"q": "llama\x00"})
    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["query.q"]


@pytest.mark.parametrize(
    "body",
    [
        {"model": {"preset": "qwen2-7b\x00"}},
        {"model": {"hub": "Qwen/Qwen2-7B\x00"}},
        {"model": {"preset": "qwen2-7b"}, "gpu": "rtx-4090\x00"},
    ],
)
def test_a_nul_character_in_a_name_slug_or_repository_is_a_422_not_a_500(client, body):
    # Each of these reached a database query; PostgreSQL refuses NUL in text parameters (found by
    # schemathesis under make test-services: a 500 on the preset name).
    response = client.post("/api/v1/estimate", body, content_type="application/json")
    assert response.status_code == 422


def test_openapi_says_seq_len_is_vllms_max_model_len(client):
    # Issue 25, misleads 10: the mapping is documented where API clients read it.
    spec = client.get("/api/v1/openapi.json").json()
    schema = next(
        s
        for name, s in spec["components"]["schemas"].items()
        if "seq_len" in s.get("properties", {}) and "gpu" in s["properties"]
    )
    assert "--max-model-len" in schema["properties"]["seq_len"]["description"]


RIG = {
    "model": {"preset": "Llama 3.1 8B"},
    "runtime": "llama_cpp",
    "gpus": ["rtx-3090-24gb", "rtx-3060-12gb"],
    "llama_cpp": {"gguf_type": "Q4_K_M", "n_ctx": 8192, "n_parallel": 1},
}


def test_a_machine_of_different_gpus_splits_the_layers_by_their_memory(client):
    """Issue 28: a 3090 beside a 3060. llama.cpp splits by free memory: the 3090 exposes
    25,769,803,776 bytes (presets/gpus.json, measured), the 3060 98.5% of 12 GB = 11,820,000,000,
    so the first split point is 25,769,803,776 / 37,589,803,776 = 0.6856: of Llama 3.1 8B's 33
    slots, j / 33 < 0.6856 for j <= 22, 23 slots on the 3090 and 10 on the 3060."""
    body = post(client, RIG).json()
    devices = body["llama_cpp"]["devices"]
    assert [device["layers"] for device in devices] == [23, 10]
    # The 3060 has the less room left (11.8 GB less a third of the model against 25.8 GB less
    # two thirds): the verdict and the per-GPU figure are its.
    assert body["verdict"]["gpu"] == "rtx-3060-12gb"
    assert body["total_bytes"] == devices[1]["total"] + body["breakdown"]["cuda_context"]


def test_the_cli_reads_the_same_machine(monkeypatch):
    import io

    from django.core.management import call_command

    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(RIG)))
    out = io.StringIO()
    call_command("estimate", "--json", "-", stdout=out)
    devices = json.loads(out.getvalue())["llama_cpp"]["devices"]
    assert [device["layers"] for device in devices] == [23, 10]


@pytest.mark.parametrize(
    ("changes", "status", "message"),
    [
        ({"gpu": "rtx-3090-24gb"}, 422, "give gpu (with num_gpus) or gpus, not both"),
        ({"num_gpus": 3}, 422, "num_gpus (3) differs from the 2 gpus"),
        ({"runtime": "transformers", "llama_cpp": None}, 422, "for the llama_cpp runtime only"),
        ({"gpus": ["rtx-3090-24gb", "no-such-card"]}, 404, "No GPU with slug 'no-such-card'"),
    ],
)
def test_a_machine_that_cannot_be_named_gets_a_4xx(client, changes, status, message):
    body = {key: value for key, value in {**RIG, **changes}.items() if value is not None}
    response = post(client, body)
    assert response.status_code == status
    assert message in response.json()["errors"][0]["message"]

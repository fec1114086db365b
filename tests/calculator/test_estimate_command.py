import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def test_estimate_command_prints_a_result_for_one_request(tmp_path):
    path = tmp_path / "request.json"
    # 7B custom model at bf16: weights are 7e9 × 2 bytes (hand calculation).
    path.write_text(json.dumps({"model": {"params_billion": 7}, "seq_len": 1024}))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    result = json.loads(out.getvalue())
    assert result["breakdown"]["weights"] == 14_000_000_000
    assert result["total_bytes"] > result["peak_allocated_bytes"]


def test_estimate_command_reads_a_list(tmp_path):
    path = tmp_path / "requests.json"
    path.write_text(
        json.dumps([{"model": {"params_billion": 1}}, {"model": {"params_billion": 2}}])
    )
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    assert len(json.loads(out.getvalue())) == 2


def test_bad_input_exits_2_with_the_validation_errors(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"model": {"params_billion": 7}, "batch_size": -1}))
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("estimate", "--json", str(path), stderr=err)
    assert raised.value.returncode == 2
    assert "batch_size" in err.getvalue()


@pytest.mark.django_db
def test_the_cli_reads_the_apis_body(tmp_path):
    # Issue 25, persona 4, defect 1: {"preset": …} and "gpu" were refused.
    path = tmp_path / "request.json"
    body = {"model": {"preset": "llama-3.1-8b"}, "gpu": "rtx-4090-24gb", "ram_gb": 32}
    path.write_text(json.dumps(body))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    result = json.loads(out.getvalue())
    assert result["model"]["name"] == "Llama 3.1 8B"
    assert result["verdict"]["gpu"] == "rtx-4090-24gb"
    assert result["inputs"]["ram_gb"] == 32
    # --gpu chooses the card for every request, in place of the body's.
    out = io.StringIO()
    call_command("estimate", "--json", str(path), "--gpu", "h100-sxm-80gb", stdout=out)
    assert json.loads(out.getvalue())["verdict"]["gpu"] == "h100-sxm-80gb"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": {"preset": "no such model"}}, "No preset matches"),
        ({"model": {"params_billion": 7}, "gpu": "no-such-gpu"}, "No GPU with slug"),
    ],
)
def test_the_cli_names_what_it_cannot_find_and_exits_2(tmp_path, body, message):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body))
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("estimate", "--json", str(path), stdout=io.StringIO(), stderr=err)
    assert raised.value.returncode == 2
    assert message in err.getvalue()


def _cli_errors(tmp_path, body) -> list[str]:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body))
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("estimate", "--json", str(path), stdout=io.StringIO(), stderr=err)
    assert raised.value.returncode == 2
    return err.getvalue().splitlines()


def _api_errors(client, body) -> list[str]:
    response = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert 400 <= response.status_code < 500
    return [
        f"{e['field']}: {e['message']}" if e["field"] else e["message"]
        for e in response.json()["errors"]
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {"model": {"preset": "qwen2-7b"}, "runtime": "vllm"},  # no vllm.gpu_memory_bytes
        {"model": {"preset": "qwen2-7b"}, "seq_len": 0},
        {"model": {"params_billion": -1}},
        {"model": {"config": {"model_type": "llama"}}},
        {"model": {"preset": "no such model"}},
        {"model": {"hub": "not a repo"}},
    ],
)
def test_the_cli_words_a_bad_request_as_the_api_does(client, tmp_path, body):
    # Issue 27: the CLI printed pydantic's raw dump ("function-after[_vllm_knows_gpu_memory(),
    # ..."); it now prints the API's "field: message" lines and exits 2.
    lines = _cli_errors(tmp_path, body)
    assert lines == _api_errors(client, body)
    assert not any("function-after" in line for line in lines)


def test_the_cli_names_the_request_of_a_list(tmp_path):
    lines = _cli_errors(
        tmp_path, [{"model": {"params_billion": 1}}, {"model": {"params_billion": -1}}]
    )
    assert lines == ["[1].model.params_billion: Input should be greater than 0"]


@pytest.mark.django_db
def test_the_cli_reads_every_model_form_of_the_api(tmp_path, hub):
    # The four forms POST /api/v1/estimate takes (calculator/api/v1.py ApiEstimateRequest.model).
    from tests.conftest import load_validation_config
    from tests.hub_standin import Repo

    config = load_validation_config("qwen2.5-0.5b")
    hub.add("standin/qwen-cli", Repo(files={"config.json": json.dumps(config).encode()}))
    bodies = [
        {"model": {"preset": "qwen2-7b"}},
        {"model": {"hub": "standin/qwen-cli"}},
        {"model": {"config": config}},
        {"model": {"params_billion": 7}},
    ]
    path = tmp_path / "requests.json"
    path.write_text(json.dumps(bodies))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), stdout=out)
    results = json.loads(out.getvalue())
    assert len(results) == 4
    # The Hub copy and the pasted config are the same published config: the same weights.
    assert results[1]["breakdown"]["weights"] == results[2]["breakdown"]["weights"]
    # A custom 7B model in BF16: 7e9 x 2 bytes (hand calculation).
    assert results[3]["breakdown"]["weights"] == 14_000_000_000

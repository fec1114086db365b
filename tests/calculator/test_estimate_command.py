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

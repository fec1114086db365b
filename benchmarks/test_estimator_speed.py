"""Estimator speed (pytest-benchmark), run on demand: `make bench`. Target: under 1 ms a call.

Not part of `make test`: timings depend on the machine; the figure to quote is the ratio to the
1 ms target that the summary prints.
"""

import json
from pathlib import Path

import pytest

from calculator.estimator import EstimateRequest, estimate

CONFIG = json.loads(
    (Path(__file__).resolve().parent.parent / "validation/configs/llama-3.1-8b.json").read_text()
)
TARGET_SECONDS = 1e-3
REQUESTS = {
    "inference": {"mode": "inference", "seq_len": 4096},
    "lora": {"mode": "lora", "seq_len": 2048, "lora": {"rank": 16, "targets": "all-linear"}},
    "full_finetune_zero3": {
        "mode": "full_finetune",
        "mixed_precision": True,
        "num_gpus": 8,
        "zero_stage": 3,
    },
    "qlora": {"mode": "qlora", "seq_len": 4096, "gradient_checkpointing": True},
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_estimate_speed(benchmark, name):
    request = EstimateRequest.model_validate({"model": {"config": CONFIG}, **REQUESTS[name]})
    result = benchmark(estimate, request)
    assert result.total_bytes > 0
    mean = benchmark.stats.stats.mean
    print(f"\n{name}: {mean * 1e6:.0f} µs per call = {mean / TARGET_SECONDS:.2f} × the 1 ms target")


def test_validation_and_estimate_speed(benchmark):
    """From JSON to result, as the API does it."""
    payload = json.dumps({"model": {"config": CONFIG}, "mode": "lora"})
    benchmark(lambda: estimate(EstimateRequest.model_validate_json(payload)))
    mean = benchmark.stats.stats.mean
    print(
        f"\njson→result: {mean * 1e6:.0f} µs per call = {mean / TARGET_SECONDS:.2f} × the 1 ms target"
    )

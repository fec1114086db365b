"""The cache of state-space / hybrid models against transformers' own, measured.

Expected values: validation/measurements_ssm.json, measured by validation/measure.py
(MemTracker under FakeTensorMode, transformers 5.24.0, torch 2.13.0) on the cases of
``make_cases.py --ssm``. What a forward with use_cache=True leaves alive is the weights and buffers,
the input ids (MemTracker's "Other"), the last-position logits (in the dtype the case records)
and the cache; the cache is what remains after taking the others off, and the estimator's KV-cache component (fixed
state of the Mamba / DeltaNet / convolution layers plus keys and values of attention layers)
must equal it.
"""

import json
import math
from pathlib import Path

import pytest

from calculator.estimator import ConfigModel, EstimateRequest, estimate
from tests.conftest import VALIDATION_CONFIGS

MEASURED = Path(__file__).resolve().parents[2] / "validation" / "measurements_ssm.json"
LOGIT_BYTES = {"torch.float32": 4, "torch.bfloat16": 2, "torch.float16": 2}
CASES = [case for case in json.loads(MEASURED.read_text())["cases"] if case.get("ok")]


def test_at_least_one_state_space_model_is_measured():
    assert any(case["model_type"] == "mamba" for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_cache_equals_what_transformers_keeps(case):
    config = json.loads((VALIDATION_CONFIGS / f"{case['config']}.json").read_text())
    request = EstimateRequest.model_validate({"model": {"config": config}, **case["request"]})
    assert isinstance(request.model, ConfigModel)
    logits = math.prod(case["logits_shape"]) * LOGIT_BYTES[case["logits_dtype"]]
    categories = case["peak_by_category"]
    kept = categories["Parameter"] + categories["Buffer"] + categories["Other"] + logits
    observed = case["live_after_forward_bytes"] - kept
    assert estimate(request).breakdown.kv_cache == observed

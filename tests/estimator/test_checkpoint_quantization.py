"""Reading a pre-quantized checkpoint's ``quantization_config`` (published configs from the
catalogue: deepseek-ai/DeepSeek-V3 config.json, FP8 blocks; openai/gpt-oss-20b, MXFP4 experts;
moonshotai/Kimi-K2.5 via ai-dynamo/aiconfigurator@095f58a5, compressed-tensors int4 groups of 32)."""

import json
from pathlib import Path

import pytest

from calculator.estimator import EstimateRequest, estimate
from calculator.estimator.checkpoint import checkpoint_quantization
from calculator.estimator.core import vllm_options

ROOT = Path(__file__).resolve().parents[2]


def preset_config(family: str, slug: str) -> dict:
    presets = json.loads((ROOT / f"presets/models/{family}.json").read_text())["presets"]
    return next(p for p in presets if p["slug"] == slug)["config"]


@pytest.mark.parametrize(
    ("family", "slug", "method", "bits", "precision", "vllm"),
    [
        ("deepseek", "deepseek-v3", "fp8", 8, "fp8", "fp8"),
        ("gpt_oss", "gpt-oss-20b", "mxfp4", 4, "int4", "mxfp4"),
        # "num_bits": 4, "type": "int" in config_groups.group_0.weights (pack-quantized).
        ("kimi", "kimi-k2.5", "compressed-tensors", 4, "int4", "gptq"),
    ],
)
def test_published_quantization_configs_are_read(family, slug, method, bits, precision, vllm):
    stored = checkpoint_quantization(preset_config(family, slug))
    assert stored is not None
    assert (stored.method, stored.weight_bits, stored.precision, stored.vllm) == (
        method,
        bits,
        precision,
        vllm,
    )


def test_a_plain_release_has_no_checkpoint_quantization():
    assert checkpoint_quantization(preset_config("llama", "llama-3.1-8b")) is None


def test_an_unknown_method_is_named_not_guessed():
    stored = checkpoint_quantization({"quantization_config": {"quant_method": "hqq", "nbits": 4}})
    assert stored is not None
    assert (stored.method, stored.precision, stored.vllm) == ("hqq", None, "none")


def test_vllm_reads_the_checkpoint_format_when_none_is_chosen():
    model = {"config": preset_config("deepseek", "deepseek-v3")}
    base = {"model": model, "runtime": "vllm", "tensor_parallel": 8, "num_gpus": 8}
    implicit = EstimateRequest.model_validate({**base, "vllm": {"gpu_memory_bytes": 140 << 30}})
    assert vllm_options(implicit).quantization == "fp8"
    as_bf16 = EstimateRequest.model_validate(
        {**base, "vllm": {"gpu_memory_bytes": 140 << 30, "quantization": "none"}}
    )
    # FP8 stores the linear layers (nearly all of DeepSeek V3's 671B parameters) in one byte
    # instead of two, so the weights per GPU drop by well over a third.
    fp8, bf16 = estimate(implicit).vllm, estimate(as_bf16).vllm
    assert fp8 is not None
    assert bf16 is not None
    assert fp8.weights < 0.6 * bf16.weights

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


# --- the checkpoint's stored bytes as its weights --------------------------------------------


def mistral_gptq() -> tuple[dict, dict[str, int], int]:
    """mistralai/Mistral-7B-v0.1's published config (presets/models/mistral.json) as a 4-bit
    GPTQ checkpoint with act-order (the keys transformers' GPTQConfig writes), and its
    safetensors summary by hand from vLLM gptq.py create_weights: qweight int32 [in / 8, out],
    qzeros int32 [in / 128, out / 8], scales fp16 [in / 128, out] and, with desc_act, g_idx
    int32 [in] per linear layer; embeddings, LM head and norms in fp16.

    Per layer, in × out summed over q, k, v, o, gate, up, down = 218,103,808, and the inputs
    (for g_idx) 6 × 4096 + 14336 = 38,912."""
    config = {
        **preset_config("mistral", "mistral-7b-v0.1"),
        "quantization_config": {
            "quant_method": "gptq",
            "bits": 4,
            "group_size": 128,
            "desc_act": True,
            "sym": True,
        },
    }
    per_layer, inputs = 218_103_808, 6 * 4096 + 14336
    int32 = 32 * (per_layer // 8 + per_layer // 128 // 8 + inputs)
    fp16 = 32 * (per_layer // 128) + 2 * 32000 * 4096 + 32 * 2 * 4096 + 4096
    stored = 4 * int32 + 2 * fp16
    assert stored == 4_155_777_024  # 4,980,736 bytes of g_idx above the AWQ layout
    return config, {"I32": int32, "F16": fp16}, stored


def test_the_stored_bytes_replace_the_format_estimate():
    config, dtypes, stored = mistral_gptq()
    with_dtypes = {"config": config, "checkpoint_dtypes": dtypes}
    exact = estimate(EstimateRequest.model_validate({"model": with_dtypes, "precision": "int4"}))
    assert exact.breakdown.weights == stored
    assert exact.breakdown.quantization_overhead == 0
    assert exact.checkpoint_weight_bytes == stored
    assert exact.params_total == 7_241_732_096  # the logical count, not the packed elements
    # Without the summary, the int4 format's estimate knows no g_idx.
    guessed = estimate(
        EstimateRequest.model_validate({"model": {"config": config}, "precision": "int4"})
    )
    assert guessed.checkpoint_weight_bytes is None
    guessed_weights = guessed.breakdown.weights + guessed.breakdown.quantization_overhead
    assert stored - guessed_weights == 32 * 4 * 38_912


def test_stored_bytes_split_over_tensor_parallel_ranks():
    config, dtypes, stored = mistral_gptq()
    model = {"config": config, "checkpoint_dtypes": dtypes}
    result = estimate(
        EstimateRequest.model_validate(
            {"model": model, "precision": "int4", "tensor_parallel": 2, "num_gpus": 2}
        )
    )
    # The two RMSNorm weights of each of the 32 layers (fp16) stay whole on each rank; the rest
    # of the stored bytes is halved.
    norms = 32 * 2 * 4096 * 2
    assert result.breakdown.weights == (stored - norms) // 2 + norms


def test_vllm_with_tensor_parallelism_reads_the_stored_bytes():
    config, dtypes, stored = mistral_gptq()
    model = {"config": config, "checkpoint_dtypes": dtypes}
    base = {"model": model, "runtime": "vllm", "tensor_parallel": 2, "num_gpus": 2}
    result = estimate(
        EstimateRequest.model_validate({**base, "vllm": {"gpu_memory_bytes": 80 << 30}})
    )
    # Norms of 32 layers and the final one (fp16) on every rank, the rest halved, plus the
    # rotary cache (32768 positions × 128 × 2 bytes).
    norms = (32 * 2 * 4096 + 4096) * 2
    assert result.breakdown.weights == (stored - norms) // 2 + norms + 32768 * 128 * 2
    assert result.checkpoint_weight_bytes == stored


def test_llama_cpp_loads_a_gguf_not_the_checkpoint():
    config, dtypes, _stored = mistral_gptq()
    with_dtypes = {"config": config, "checkpoint_dtypes": dtypes}
    request = {"runtime": "llama_cpp", "precision": "int4"}
    a = estimate(EstimateRequest.model_validate({**request, "model": with_dtypes}))
    b = estimate(EstimateRequest.model_validate({**request, "model": {"config": config}}))
    assert a.checkpoint_weight_bytes is None
    assert a.breakdown == b.breakdown

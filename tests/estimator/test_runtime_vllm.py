"""vLLM's start-up budget and KV-cache pool.

Expected values come from hand calculations written out below (parameter counts from
tests/estimator/data/transformers_param_counts.json, a transformers meta-device count; shapes from
presets/models/*.json) and from the start-up logs in validation/published/vllm_logs.json (each
entry cites its GitHub thread). Bounds from issue 13: weights within 3% and KV-cache tokens within
10% median over the logs.
"""

import json
import statistics

import pytest

from calculator.estimator.runtimes.vllm import (
    VllmOptions,
    activation_peak_bytes,
    concurrency_at,
    estimate_vllm,
    kv_bytes_per_token,
    longest_max_model_len,
    non_torch_bytes,
    weights_bytes,
)
from validation.runtime_logs import PUBLISHED, architecture, vllm_rows

GIB = 1 << 30
H100 = int(79.22 * GIB)  # what vLLM printed as an H100 80GB's total in vllm#10511
ROWS = vllm_rows()


def test_weights_by_hand():
    arch = architecture("llama-3-8b")
    params = 8_030_261_248  # transformers_param_counts.json, preset:llama-3-8b
    rope_cache = 8192 * 128 * 2  # max_position_embeddings x head_dim, bf16
    assert weights_bytes(arch, VllmOptions(gpu_memory_bytes=H100)) == params * 2 + rope_cache
    # AWQ: linear weights at 4 bits plus an fp16 scale and a 4-bit zero per 128.
    awq = weights_bytes(arch, VllmOptions(gpu_memory_bytes=H100, quantization="awq"))
    linear = 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)
    embeddings = 2 * 128256 * 4096 * 2  # embed_tokens and lm_head stay bf16
    norms = (2 * 32 + 1) * 4096 * 2
    assert awq == int(linear * (0.5 + 2.5 / 128) + embeddings) + norms + rope_cache


def test_mxfp4_experts_padded_for_marlin_by_hand():
    """gpt-oss-20b (presets/models/gpt_oss.json: hidden 2880, moe intermediate 2880, 32 experts,
    24 layers, gated): vLLM's mxfp4.py at 007d500 allocates the experts with the hidden size rounded
    up to 256 (3072) and each rank's intermediate size to 128 (2880 -> 2944; 1440 -> 1536 at TP 2),
    at 4 bits plus one byte of scale per 32. Only the experts differ from a bf16 load."""
    arch = architecture("gpt-oss-20b")
    experts_bf16 = 32 * 3 * 2880 * 2880 * 24 * 2
    mxfp4 = 0.5 + 1 / 32
    for tp, rank_intermediate in [(1, 2944), (2, 1536)]:
        bf16 = VllmOptions(gpu_memory_bytes=H100, tensor_parallel=tp)
        packed = bf16.model_copy(update={"quantization": "mxfp4"})
        padded_experts = 32 * 3 * 3072 * rank_intermediate * 24 * mxfp4
        saved = weights_bytes(arch, bf16) - weights_bytes(arch, packed)
        assert saved == pytest.approx(experts_bf16 / tp - padded_experts, abs=2)


def test_non_torch_memory_grows_with_tensor_parallelism():
    """vLLM 0.19 start-up logs (llm-d-planner#205 in vllm_logs.json): 0.24-0.27 GiB of non-torch
    memory on one GPU, 2.07-2.21 GiB per rank with tensor parallelism."""
    assert 0.2 * GIB <= non_torch_bytes(1) <= 0.35 * GIB
    assert 2.0 * GIB <= non_torch_bytes(2) <= 2.25 * GIB
    assert non_torch_bytes(4) == non_torch_bytes(2)


def test_kv_bytes_per_token_by_hand():
    arch = architecture("llama-3-8b")
    one = kv_bytes_per_token(arch, VllmOptions(gpu_memory_bytes=H100))
    assert one == 32 * 2 * 8 * 128 * 2 == 131_072
    assert (
        kv_bytes_per_token(arch, VllmOptions(gpu_memory_bytes=H100, tensor_parallel=2)) == one // 2
    )
    assert (
        kv_bytes_per_token(arch, VllmOptions(gpu_memory_bytes=H100, kv_cache_dtype="fp8"))
        == one // 2
    )
    # MLA (DeepSeek-V2-Lite): the latent kv_lora_rank + rope dims, one tensor per layer.
    lite = architecture("deepseek-v2-lite")
    assert kv_bytes_per_token(lite, VllmOptions(gpu_memory_bytes=H100)) == 27 * (512 + 64) * 2


def test_sparse_attention_caches_fp8_latents_and_indexer_keys():
    # DeepSeek-V3.2 (presets/models/deepseek.json: 61 layers, kv_lora_rank 512, rope 64,
    # index_head_dim 128, an indexer in every layer). An FP8 cache is FlashMLA's 656-byte
    # "fp8_ds_mla" layout; the indexer keeps 128 FP8 keys + one FP32 scale = 132 bytes per layer:
    # 61 x (656 + 132) = 48,068 bytes a token, the figure a published SGLang start-up log of
    # DeepSeek-V3.2 FP8 divides out (../shared/research/engines-2026.md section 3.4).
    v32 = architecture("deepseek-v3.2")
    fp8 = VllmOptions(gpu_memory_bytes=H100, kv_cache_dtype="fp8")
    assert kv_bytes_per_token(v32, fp8) == 61 * (656 + 132) == 48_068
    # In BF16 the latent is 576 x 2 bytes; the indexer keys stay FP8.
    assert kv_bytes_per_token(v32, VllmOptions(gpu_memory_bytes=H100)) == 61 * (1152 + 132)


def test_budget_and_blocks_by_hand():
    arch = architecture("llama-3-8b")
    options = VllmOptions(gpu_memory_bytes=H100, max_model_len=8192)
    result = estimate_vllm(arch, options)
    assert result.budget == int(H100 * 0.9)
    assert (
        result.kv_cache
        == result.budget - result.weights - result.activation_peak - result.non_torch
    )
    assert result.num_gpu_blocks == result.kv_cache // (16 * 131_072)
    assert result.kv_cache_tokens == result.num_gpu_blocks * 16
    assert result.max_concurrency == round(result.num_gpu_blocks / (8192 // 16), 2)
    # On a GPU of 70 GiB or more the OpenAI server profiles 8192 tokens over 1024 sequences.
    assert (result.max_num_batched_tokens, result.max_num_seqs) == (8192, 1024)
    assert result.activation_peak == activation_peak_bytes(arch, 8192, 1024, 1)


def test_concurrency_levers():
    arch = architecture("llama-3-8b")
    options = VllmOptions(gpu_memory_bytes=int(23.58 * GIB))
    longest = longest_max_model_len(arch, options)
    assert estimate_vllm(arch, options.model_copy(update={"max_model_len": longest})).fits
    assert not estimate_vllm(arch, options.model_copy(update={"max_model_len": longest + 16})).fits
    assert concurrency_at(arch, options, 4096) > concurrency_at(arch, options, 8192)
    assert estimate_vllm(arch, options.model_copy(update={"max_model_len": longest})).fits


def test_too_small_a_card_does_not_fit():
    arch = architecture("llama-3.1-70b")
    result = estimate_vllm(arch, VllmOptions(gpu_memory_bytes=H100))
    assert result.kv_cache == 0
    assert not result.fits


# --- published logs ---------------------------------------------------------------------------
def test_every_log_cites_an_issue_or_pull_request():
    logs = json.loads((PUBLISHED / "vllm_logs.json").read_text())["logs"]
    assert len(logs) >= 39
    for log in logs:
        assert log["source"].startswith("https://github.com/")
        assert "/issues/" in log["source"] or "/pull/" in log["source"]


@pytest.mark.parametrize(("figure", "bound"), [("weights", 0.03), ("KV cache tokens", 0.10)])
def test_median_error_within_the_issue_bound(figure, bound):
    errors = [abs(row["error"]) for row in ROWS if row["buffer"] == figure]
    assert len(errors) >= 5
    assert statistics.median(errors) <= bound


def test_outliers_are_explained():
    outliers = [row for row in ROWS if abs(row["error"]) > 0.10]
    assert all(row["note"] for row in outliers), [row["id"] for row in outliers]

"""llama.cpp's GGUF sizes and load-time buffers.

Expected values come from (a) hand calculations written out below from ggml's block table
(``ggml/src/ggml-common.h``: Q4_0 is 18 bytes per 32 values, Q4_K 144 per 256, Q6_K 210 per 256,
Q8_0 34 per 32) and the configs in presets/models/*.json, and (b) the start-up logs collected from
public GitHub issues in validation/published/llama_cpp_logs.json (each entry cites its thread).
Bounds from issue 13: model, KV and compute buffers each within 5% median over the logs.
"""

import json
import statistics

import pytest

from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes.llama_cpp import (
    GGUF_TYPES,
    LlamaCppOptions,
    cache_row_bytes,
    estimate_llama_cpp,
    gguf_tensors,
    kv_cells,
    longest_context_full_offload,
    most_gpu_layers_that_fit,
    tensor_bytes,
)
from tests.conftest import load_validation_config
from validation.runtime_logs import PUBLISHED, architecture, llama_cpp_rows

MIB = 1 << 20
GIB = 1 << 30
ROWS = llama_cpp_rows()


def llama3_8b():
    return architecture("llama-3-8b")


def test_every_file_type_the_issue_lists_is_offered():
    wanted = "F32 BF16 F16 Q8_0 Q6_K Q5_K_M Q5_K_S Q5_0 Q4_K_M Q4_K_S Q4_0 IQ4_XS IQ4_NL Q3_K_L "
    wanted += "Q3_K_M Q3_K_S IQ3_M IQ3_XXS Q2_K IQ2_M IQ2_XS IQ2_XXS IQ1_M IQ1_S"
    assert set(wanted.split()) <= set(GGUF_TYPES)
    arch = llama3_8b()
    sizes = {
        t: estimate_llama_cpp(
            arch, LlamaCppOptions.model_validate({"gguf_type": t})
        ).gguf_file_bytes
        for t in GGUF_TYPES
    }
    assert (
        sizes["F32"]
        > sizes["F16"]
        == sizes["BF16"]
        > sizes["Q8_0"]
        > sizes["Q4_K_M"]
        > sizes["IQ1_S"]
    )


def test_block_arithmetic_by_hand():
    # One 4096 x 4096 projection: 4096 / 256 = 16 super-blocks per row.
    attn_q = next(t for t in gguf_tensors(llama3_8b()) if t.name == "blk.0.attn_q")
    assert tensor_bytes(attn_q, "Q4_K") == 4096 * 16 * 144 == 9_437_184
    assert tensor_bytes(attn_q, "Q6_K") == 4096 * 16 * 210
    assert tensor_bytes(attn_q, "Q8_0") == 4096 * (4096 // 32) * 34
    # Quantized KV rows: a 1024-wide q8_0 row is 32 blocks of 34 bytes; q4_0 is 18 per 32.
    assert cache_row_bytes("q8_0", 1024) == 32 * 34 == 1088
    assert cache_row_bytes("q4_0", 1024) == 32 * 18 == 576
    assert cache_row_bytes("f16", 1024) == 2048


def test_q4_0_file_of_llama3_8b_by_hand():
    """Q4_0: every 2-D weight Q4_0 except the output head (Q6_K); norms stay F32."""
    per_layer = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336  # attention + SwiGLU
    linear = 32 * per_layer  # 6_979_321_856 weights
    embd = 128256 * 4096  # 525_336_576
    expected = (
        linear * 18 // 32  # Q4_0 blocks
        + embd * 18 // 32  # token_embd keeps the base type
        + embd * 210 // 256  # output.weight -> Q6_K
        + (2 * 32 + 1) * 4096 * 4  # attn_norm, ffn_norm per layer and output_norm, F32
    )
    assert expected == 4_653_375_488
    result = estimate_llama_cpp(llama3_8b(), LlamaCppOptions(gguf_type="Q4_0"))
    assert result.gguf_file_bytes == expected
    assert result.tensor_types == {"Q4_0": 225, "Q6_K": 1, "F32": 33}


def test_q4_k_m_mix_keeps_a_sixteenth_of_tensors_at_q6_k():
    """use_more_bits(i, 32): layers 0-3, 28-31 and 6, 9, ..., 27 -> 16 attn_v + 16 ffn_down."""
    result = estimate_llama_cpp(llama3_8b(), LlamaCppOptions(gguf_type="Q4_K_M"))
    assert result.tensor_types["Q6_K"] == 16 + 16 + 1  # + output.weight
    assert result.tensor_types["Q4_K"] == 7 * 32 - 32 + 1  # + token_embd


def test_kv_buffer_by_hand():
    # Llama-3-8B, f16, 8192 cells: 32 layers x (K + V) x 1024 wide x 2 bytes x 8192 = 1 GiB.
    f16 = estimate_llama_cpp(llama3_8b(), LlamaCppOptions(n_ctx=8192))
    assert f16.kv_buffer.total == 32 * 2 * 1024 * 2 * 8192 == GIB
    q8 = estimate_llama_cpp(
        llama3_8b(), LlamaCppOptions(n_ctx=8192, cache_type_k="q8_0", cache_type_v="q8_0")
    )
    assert q8.kv_buffer.total == 32 * 2 * 1088 * 8192
    # n_ctx is padded to a multiple of 256.
    assert estimate_llama_cpp(llama3_8b(), LlamaCppOptions(n_ctx=1000)).n_ctx_padded == 1024


def test_sliding_window_cache_by_hand():
    # Gemma-2-9B: window 4096 (config), 2 slots, ubatch 512 (llama-kv-cache-iswa.cpp @ 0c1e570).
    # One stream per slot (-np 2): each holds pad(32768 / 2, 256) = 16384 cells and its sliding
    # cache pad(min(16384, 4096 + 512), 256) = 4608, 9216 in all. Unified (-kvu): one stream
    # of pad(min(32768, 2 x 4096 + 512), 256) = 8704.
    arch = architecture("gemma-2-9b")
    full, swa = kv_cells(arch, LlamaCppOptions(n_ctx=32768, n_parallel=2, n_ubatch=512))
    assert (full, swa) == (32768, 9216)
    unified = LlamaCppOptions(n_ctx=32768, n_parallel=2, n_ubatch=512, kv_unified=True)
    assert kv_cells(arch, unified) == (32768, 8704)
    result = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=32768, n_parallel=2))
    per_cell = 2 * 8 * 256 * 2  # K + V, 8 KV heads x 256, f16
    assert result.kv_buffer.total == 21 * per_cell * 32768 + 21 * per_cell * 9216
    # --swa-full gives every layer the whole context; Mistral's window is ignored by llama.cpp.
    full_swa = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=32768, n_parallel=2, swa_full=True))
    assert full_swa.kv_buffer.total == 42 * per_cell * 32768
    assert kv_cells(architecture("mistral-7b-v0.1"), LlamaCppOptions(n_ctx=32768)) == (32768, 0)


def test_quantized_cache_quantizes_the_sliding_layers_too():
    # PR #21277 kept the sliding-window cache F16; PR #21332 reverted it the next day, and
    # llama_kv_cache_iswa @ 0c1e570 passes -ctk/-ctv to both caches.
    arch = architecture("gemma-2-9b")
    options = LlamaCppOptions(n_ctx=32768, n_parallel=2, cache_type_k="q8_0", cache_type_v="q8_0")
    result = estimate_llama_cpp(arch, options)
    q8_cell = 2 * 8 * 256 * 34 // 32  # K + V, 2048 wide, q8_0 = 34 bytes per 32 values
    assert result.kv_buffer.total == 21 * q8_cell * 32768 + 21 * q8_cell * 9216


def test_mla_caches_the_latent_as_k_and_no_v():
    # DeepSeek-V2-Lite (presets/models/deepseek.json, from its config.json: kv_lora_rank 512,
    # qk_rope_head_dim 64, 27 layers): llama_kv_cache @ 0c1e570 makes K of n_embd_head_k =
    # 512 + 64 = 576 per cell and no V tensor under MLA (has_v = !is_mla): 27 x 576 x 2 bytes
    # x 4096 cells, f16.
    arch = architecture("deepseek-v2-lite")
    result = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=4096, n_parallel=1))
    assert result.kv_buffer.total == 27 * 576 * 2 * 4096
    # The issue measured the old count (K 576 + V 512 a layer) 89% above llama.cpp's own for
    # Kimi K2 and GLM-4.7-Flash: 1,088 / 576 = 1.889.


def test_sparse_attention_adds_the_indexer_keys():
    # DeepSeek-V3.2 (presets/models/deepseek.json: 61 layers, kv_lora_rank 512, rope 64,
    # index_head_dim 128, an indexer in every layer): llama_kv_cache_dsa @ 0c1e570 keeps the MLA
    # cache (576-wide K, no V) and an indexer key cache of one 128-wide head, both in type_k.
    # The issue measured the old count (1,088 a layer) 55% above llama.cpp's: 1,088 / 704 = 1.545.
    arch = architecture("deepseek-v3.2")
    f16 = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=4096, n_parallel=1))
    assert f16.kv_buffer.total == 61 * (576 + 128) * 2 * 4096
    q8 = LlamaCppOptions(n_ctx=4096, n_parallel=1, cache_type_k="q8_0", cache_type_v="q8_0")
    # q8_0: 34 bytes per 32 values; 576 and 128 are whole blocks.
    assert estimate_llama_cpp(arch, q8).kv_buffer.total == 61 * (18 + 4) * 34 * 4096


def test_hybrid_keeps_kv_on_attention_layers_and_f32_recurrent_state():
    # Qwen3.6-27B (presets/models, config.json): 64 layers, every 4th full attention (16), 4 KV heads
    # x 256; 48 Gated DeltaNet layers. The published log (lmstudio-bug-tracker#1862) printed
    # "llama_kv_cache: size = 16384.00 MiB (262144 cells, 16 layers, 4/1 seqs)" and
    # "llama_memory_recurrent: size = 598.50 MiB (4 cells, 64 layers, 4 seqs)".
    log = next(
        log
        for log in json.loads((PUBLISHED / "llama_cpp_logs.json").read_text())["logs"]
        if log["id"] == "lmstudio-1862-qwen3.6-27b-hybrid"
    )
    arch = architecture("qwen3.6-27b")
    result = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=262144, n_parallel=4))
    assert result.kv_buffer.total == 16 * 2 * 4 * 256 * 2 * 262144 == 16384 * MIB
    # Recurrent state per cell and layer, f32 (llama-hparams.cpp n_embd_r + n_embd_s): the conv
    # state keeps linear_conv_kernel_dim - 1 = 3 columns of (2 x 16 key heads + 48 value heads)
    # x 128 channels, the delta-rule state is 48 value heads x 128 x 128; one cell per slot.
    per_layer = 4 * (3 * (2 * 16 * 128 + 48 * 128) + 48 * 128 * 128)
    assert result.recurrent_buffer.total == 48 * 4 * per_layer
    assert result.recurrent_buffer.total == log["compare"]["recurrent_buffer_mib"] * MIB
    assert result.gpu_bytes >= result.kv_buffer.gpu + result.recurrent_buffer.gpu


# The RS buffer by hand from the preset configs (presets/models/*.json), with llama.cpp's sizes
# (src/llama-hparams.cpp): n_embd_r = (d_conv - 1) x (d_inner + 2 x n_group x d_state), for LFM2
# hidden x (L_cache - 1); n_embd_s = d_state x d_inner; F32, per recurrent layer and slot.
RS_BYTES_PER_SLOT = {
    # Jamba 1.5 Mini: hidden 4096, mamba_expand 2 (d_inner 8192), mamba_d_conv 4, mamba_d_state 16,
    # Mamba-1 (no groups); 32 layers, attention every 8th from layer 4, so 28 Mamba layers.
    "jamba-1.5-mini": 28 * 4 * (3 * 8192 + 16 * 8192),
    # LFM2.5 2.6B: hidden 2048, conv_L_cache 3, 22 of the 30 layer_types "conv"; no SSM state.
    "lfm2.5-2.6b": 22 * 4 * (2048 * 2),
    # Granite 4.0 H Tiny: mamba_n_heads 48 x mamba_d_head 64 (d_inner 3072), mamba_n_groups 1,
    # mamba_d_state 128, mamba_d_conv 4; 36 of the 40 layer_types "mamba".
    "granite-4.0-h-tiny": 36 * 4 * (3 * (3072 + 2 * 128) + 128 * 3072),
}


@pytest.mark.parametrize("slots", [1, 4])
@pytest.mark.parametrize("slug", RS_BYTES_PER_SLOT)
def test_recurrent_state_by_hand_is_f32_and_one_per_slot(slug, slots):
    arch = architecture(slug)
    result = estimate_llama_cpp(arch, LlamaCppOptions(n_parallel=slots))
    assert result.recurrent_buffer.gpu == slots * RS_BYTES_PER_SLOT[slug]
    assert result.recurrent_buffer.host == 0
    assert result.gpu_bytes == (
        result.model_buffer.gpu
        + result.kv_buffer.gpu
        + result.recurrent_buffer.gpu
        + result.compute_buffer.gpu
    )
    # F32 whatever the KV cache types (create_memory passes GGML_TYPE_F32 for both).
    q8 = estimate_llama_cpp(
        arch, LlamaCppOptions(n_parallel=slots, cache_type_k="q8_0", cache_type_v="q8_0")
    )
    assert q8.recurrent_buffer == result.recurrent_buffer


def test_recurrent_state_figures_of_the_review():
    # One slot: 0.36 MB for LFM2.5 2.6B and 17.4 MB for Jamba 1.5 Mini (16.625 MiB).
    assert RS_BYTES_PER_SLOT["lfm2.5-2.6b"] == 360_448
    assert RS_BYTES_PER_SLOT["jamba-1.5-mini"] == 17_432_576 == 16.625 * MIB


def test_recurrent_state_of_layers_left_on_the_host_stays_there():
    arch = architecture("jamba-1.5-mini")
    # -ngl 17 of 33: layers 16..31 and the output on the GPU; attention sits on layers 4, 12, 20
    # and 28, so 14 of the 16 offloaded layers and 14 of the 16 host layers are Mamba layers.
    part = estimate_llama_cpp(arch, LlamaCppOptions(n_parallel=1, n_gpu_layers=17))
    per_layer = 4 * (3 * 8192 + 16 * 8192)
    assert part.recurrent_buffer.gpu == 14 * per_layer
    assert part.recurrent_buffer.host == 14 * per_layer
    cpu = estimate_llama_cpp(arch, LlamaCppOptions(n_parallel=1, n_gpu_layers=0))
    assert cpu.recurrent_buffer.host == 28 * per_layer
    assert cpu.gpu_bytes == 0


def test_levers_count_the_recurrent_state():
    arch = architecture("granite-4.0-h-tiny")
    options = LlamaCppOptions(n_ctx=4096, n_parallel=4)
    full = estimate_llama_cpp(arch, options)
    assert full.recurrent_buffer.gpu == 4 * RS_BYTES_PER_SLOT["granite-4.0-h-tiny"]
    assert most_gpu_layers_that_fit(arch, options, full.gpu_bytes) == 41
    # Room for everything but the RS buffer: not every layer, and not a 4096-token context.
    short = full.gpu_bytes - full.recurrent_buffer.gpu
    assert most_gpu_layers_that_fit(arch, options, short) < 41
    assert longest_context_full_offload(arch, options, full.gpu_bytes) >= 4096
    assert longest_context_full_offload(arch, options, short) < 4096


def test_compute_buffer_output_phase_by_hand():
    # Flash attention on, n_ubatch 512: logits for 512 tokens and the final norm, f32.
    result = estimate_llama_cpp(llama3_8b(), LlamaCppOptions(n_ctx=8192, flash_attention=True))
    assert result.compute_buffer.gpu == 4 * 512 * (128256 + 4096)


def test_partial_offload_places_the_first_layers_on_the_host():
    arch = llama3_8b()
    full = estimate_llama_cpp(arch, LlamaCppOptions(n_gpu_layers=None))
    part = estimate_llama_cpp(arch, LlamaCppOptions(n_gpu_layers=20))
    # ngl 20 of 33: layers 13..31 (19 of them) and the output layer on the GPU.
    assert part.gpu_layers == 20
    layer = next(t for t in gguf_tensors(arch) if t.name == "blk.0.attn_q")
    assert part.model_buffer.total == full.model_buffer.total
    assert part.kv_buffer.gpu == full.kv_buffer.total * 19 // 32
    assert part.host_bytes > full.host_bytes > 0
    assert tensor_bytes(layer, "Q4_K") < part.model_buffer.host
    cpu = estimate_llama_cpp(arch, LlamaCppOptions(n_gpu_layers=0))
    assert cpu.gpu_bytes == 0


def test_levers_are_consistent_with_the_buffers():
    arch = llama3_8b()
    options = LlamaCppOptions(n_ctx=8192)
    eight_gib = 8 * GIB
    ngl = most_gpu_layers_that_fit(arch, options, eight_gib)
    assert 0 < ngl <= 33
    fits = estimate_llama_cpp(arch, options.model_copy(update={"n_gpu_layers": ngl}))
    assert fits.gpu_bytes <= eight_gib
    longest = longest_context_full_offload(arch, options, eight_gib)
    assert longest % 256 == 0
    at = estimate_llama_cpp(arch, options.model_copy(update={"n_ctx": longest}))
    over = estimate_llama_cpp(arch, options.model_copy(update={"n_ctx": longest + 256}))
    assert at.gpu_bytes <= eight_gib < over.gpu_bytes


# --- published logs ---------------------------------------------------------------------------
def test_every_log_cites_an_issue_or_pull_request():
    logs = json.loads((PUBLISHED / "llama_cpp_logs.json").read_text())["logs"]
    assert len(logs) >= 30
    for log in logs:
        assert log["source"].startswith("https://github.com/")
        assert "/issues/" in log["source"] or "/pull/" in log["source"]


@pytest.mark.parametrize("group", ["model", "kv", "compute"])
def test_buffers_within_five_percent_median(group):
    errors = [abs(row["error"]) for row in ROWS if row["buffer"].startswith(group)]
    assert errors
    assert statistics.median(errors) <= 0.05


def test_outliers_are_explained():
    outliers = [row for row in ROWS if abs(row["error"]) > 0.10]
    assert all(row["note"] for row in outliers), [row["id"] for row in outliers]


def test_experts_in_ram_move_from_the_gpu_model_buffer_to_the_host():
    # gpt-oss-20b (presets/models/gpt_oss.json, its config.json: hidden 2880, expert width 2880,
    # 32 experts, 24 layers), MXFP4 experts: a block of 32 values is 17 bytes (ggml-common.h
    # block_mxfp4: one E8M0 scale byte + 16 bytes of 4-bit values). Per layer ffn_gate_exps,
    # ffn_up_exps and ffn_down_exps of 2880 x 2880 x 32 values each.
    arch = architecture("gpt-oss-20b")
    per_layer = 3 * 2880 * 2880 * 32 // 32 * 17
    base = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=4096, n_parallel=1))
    some = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=4096, n_parallel=1, n_cpu_moe=14))
    every = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=4096, n_parallel=1, cpu_moe=True))
    assert base.model_buffer.gpu - some.model_buffer.gpu == 14 * per_layer
    assert some.model_buffer.host - base.model_buffer.host == 14 * per_layer
    assert base.model_buffer.gpu - every.model_buffer.gpu == 24 * per_layer
    # The KV cache stays on the GPU: only weights move.
    assert every.kv_buffer == base.kv_buffer
    # A dense model has no experts to move.
    dense = estimate_llama_cpp(llama3_8b(), LlamaCppOptions(cpu_moe=True))
    assert dense.model_buffer == estimate_llama_cpp(llama3_8b(), LlamaCppOptions()).model_buffer


def test_the_expert_flags_are_written_into_the_command():
    from calculator.estimator.runtimes.commands import llama_server_command

    assert "--n-cpu-moe 14" in llama_server_command("x/y-GGUF", LlamaCppOptions(n_cpu_moe=14))
    assert "--cpu-moe" in llama_server_command("x/y-GGUF", LlamaCppOptions(cpu_moe=True))


def test_fewest_expert_layers_in_ram_is_the_smallest_that_fits():
    from calculator.estimator.runtimes.llama_cpp import fewest_cpu_moe_layers_that_fit

    arch = architecture("gpt-oss-120b")
    options = LlamaCppOptions(n_ctx=8192, n_parallel=1)
    card = 22 * GIB
    n = fewest_cpu_moe_layers_that_fit(arch, options, card)
    assert n is not None
    assert 0 < n < arch.num_layers

    def gpu(layers: int) -> int:
        return estimate_llama_cpp(arch, options.model_copy(update={"n_cpu_moe": layers})).gpu_bytes

    assert gpu(n) <= card < gpu(n - 1)
    # Nothing to move when the whole model fits; a dense model has no experts to move.
    assert fewest_cpu_moe_layers_that_fit(arch, options, 200 * GIB) == 0
    assert fewest_cpu_moe_layers_that_fit(llama3_8b(), options, card) is None
    # Attention, KV and the output head alone exceed 1 GiB: no --n-cpu-moe fits.
    assert fewest_cpu_moe_layers_that_fit(arch, options, 1 * GIB) is None


@pytest.mark.parametrize(
    ("n_ctx", "swa_full", "mib"),
    [
        # 5 full layers x 2 KV heads x 512 (K + V: 4,096 bytes a cell in f16) over n_ctx cells,
        # 25 sliding layers x 8 KV heads x 256 (8,192 bytes a cell) over pad(1024 + 512, 256) =
        # 1,536 cells (llama-kv-cache-iswa.cpp, one slot).
        (4096, False, (5 * 4096 * 4096 + 25 * 8192 * 1536) / MIB),  # 380 MiB
        (32768, False, (5 * 4096 * 32768 + 25 * 8192 * 1536) / MIB),  # 940 MiB
        (131072, False, (5 * 4096 * 131072 + 25 * 8192 * 1536) / MIB),  # 2,860 MiB
        (4096, True, (5 * 4096 * 4096 + 25 * 8192 * 4096) / MIB),  # 880 MiB
    ],
)
def test_gemma_4_kv_per_layer_shapes_and_windows(n_ctx, swa_full, mib):
    # Gemma 4 26B-A4B (validation/configs/gemma-4-26b-a4b-text.json: 30 layers, 5 sliding : 1
    # full, window 1024, 8 KV heads of 256 on sliding layers, 2 global KV heads of 512 on full
    # ones). Cross-check: the issue measured the old count (every layer full, 8 x 256:
    # 30 x 8,192 bytes a cell) +153%, +717% and +974% above llama.cpp's own allocation at 4k,
    # 32k and 128k, and +9% with --swa-full: 960/2.53 = 379, 7,680/8.17 = 940, 30,720/10.74 =
    # 2,860, 960/1.09 = 881 MiB.
    arch = Architecture.from_hf_config(load_validation_config("gemma-4-26b-a4b-text"))
    options = LlamaCppOptions(n_ctx=n_ctx, n_parallel=1, swa_full=swa_full)
    assert estimate_llama_cpp(arch, options).kv_buffer.total / MIB == mib

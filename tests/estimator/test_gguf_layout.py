"""The GGUF layout the llama.cpp estimate reads: per-layer bytes, the output layer, the tables
that stay on the host.

Expected values are hand calculations written out below from ggml's block table
(``ggml/src/ggml-common.h``: Q4_K is 144 bytes per 256 values, Q5_K 176, Q6_K 210), the rules of
``llama_tensor_get_type_impl`` (``src/llama-quant.cpp``, as the module cites it), and the
Llama 3 8B config in presets/models/llama.json (hidden 4096, 8 KV heads of 128, MLP 14336,
vocabulary 128256, 32 layers, untied embeddings).
"""

import json
from pathlib import Path

import pytest

from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes.llama_cpp import (
    LlamaCppOptions,
    estimate_llama_cpp,
    gguf_layout,
)
from validation.runtime_logs import preset_configs

Q4_K, Q5_K, Q6_K = 144, 176, 210  # bytes per super-block of 256 values
VOCAB = 128256


def k_quant(rows: int, cols: int, block_bytes: int) -> int:
    return rows * (cols // 256) * block_bytes


def llama3_8b(layers: int = 32) -> Architecture:
    return Architecture.from_hf_config(
        {**preset_configs()["llama-3-8b"], "num_hidden_layers": layers}
    )


def block_bytes(attn_v: int, ffn_down: int) -> int:
    """One Llama 3 8B block, every projection Q4_K but attn_v and ffn_down."""
    attn = k_quant(4096, 4096, Q4_K) + k_quant(1024, 4096, Q4_K)  # attn_q, attn_k
    attn += k_quant(1024, 4096, attn_v) + k_quant(4096, 4096, Q4_K)  # attn_v, attn_output
    mlp = 2 * k_quant(14336, 4096, Q4_K) + k_quant(4096, 14336, ffn_down)  # gate, up, down
    norms = 2 * 4096 * 4  # attn_norm and ffn_norm, F32
    return attn + mlp + norms


def layer_bytes(arch: Architecture, gguf_type: str) -> list[int]:
    layout = gguf_layout(arch, gguf_type)
    return [
        layout.layer_bytes_from(il) - layout.layer_bytes_from(il + 1)
        for il in range(arch.num_layers)
    ]


OUTPUT_LAYER = k_quant(VOCAB, 4096, Q6_K) + 4096 * 4  # output.weight Q6_K and output_norm


def test_llama3_8b_q4_k_m_bytes_per_layer_by_hand():
    # use_more_bits(i, 32): i < 4, i >= 28 or (i - 4) % 3 == 2 gets Q6_K.
    more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}
    # ffn_down counts by layer; attn_v by its place in the loader's name order, where blk.10 to
    # blk.19 come before blk.2:
    name_order = [0, 1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 2, 20, 21, 22]
    name_order += [23, 24, 25, 26, 27, 28, 29, 3, 30, 31, 4, 5, 6, 7, 8, 9]
    attn_v_more = {name_order[i] for i in more}
    assert attn_v_more == {0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 14, 17, 22, 25, 28, 30}
    expected = [
        block_bytes(Q6_K if il in attn_v_more else Q4_K, Q6_K if il in more else Q4_K)
        for il in range(32)
    ]
    arch = llama3_8b()
    assert layer_bytes(arch, "Q4_K_M") == expected
    layout = gguf_layout(arch, "Q4_K_M")
    assert layout.token_embd_bytes == layout.host_only_bytes == k_quant(VOCAB, 4096, Q4_K)
    assert layout.output_bytes == OUTPUT_LAYER
    assert layout.file_bytes == layout.token_embd_bytes + sum(expected) + OUTPUT_LAYER
    # llama-cpp-python#1693 printed 193 Q4_K and 33 Q6_K tensors for Llama 3.1 8B Q4_K_M.
    counts = dict(layout.tensor_types)
    assert (counts["Q4_K"], counts["Q6_K"]) == (193, 33)


def test_name_order_decides_which_layers_a_partial_offload_gets():
    # Q4_K_S: the first 4 attn_v in name order get Q5_K (i_attention_wv < 4), ffn_down of the
    # first n / 8 = 1 layer too. With 12 blocks the name order is blk.0, blk.1, blk.10, blk.11,
    # blk.2, …: layers 10 and 11, not 2 and 3, carry the larger attn_v.
    arch = llama3_8b(layers=12)
    plain, larger_v = block_bytes(Q4_K, Q4_K), block_bytes(Q5_K, Q4_K)
    expected = [block_bytes(Q5_K, Q5_K), larger_v] + [plain] * 8 + [larger_v, larger_v]
    assert layer_bytes(arch, "Q4_K_S") == expected
    # -ngl 3 of 13: layers 10 and 11 and the output layer on the GPU, the rest on the host.
    options = LlamaCppOptions(gguf_type="Q4_K_S", n_gpu_layers=3)
    model = estimate_llama_cpp(arch, options).model_buffer
    assert model.gpu == 2 * larger_v + OUTPUT_LAYER
    # On the host: token_embd, layer 0, layer 1 (the larger attn_v) and layers 2 to 9.
    host_layers = block_bytes(Q5_K, Q5_K) + larger_v + 8 * plain
    assert model.host == k_quant(VOCAB, 4096, Q4_K) + host_layers


_COUNTED = json.loads(
    (Path(__file__).parent / "data" / "transformers_param_counts.json").read_text()
)["models"]


@pytest.mark.parametrize("name", sorted(_COUNTED))
def test_a_gguf_holds_every_parameter_of_the_language_model(name):
    # convert_hf_to_gguf.py writes every tensor of the language model (a vision tower goes to
    # the mmproj file): the file's elements equal transformers' count of the model less its
    # tower (tests/estimator/data/transformers_param_counts.json, meta device, transformers
    # 5.24). Hybrid, state-space, latent-MoE and shared-KV layers included (issue 27: Nemotron-H
    # was +48% and Qwen3.5-27B -9.5% when every block was priced as attention + MLP).
    from tests.estimator.test_param_counts import _config_for

    config = _config_for(name)
    arch = Architecture.from_hf_config(config)
    language_model = _COUNTED[name]["params_total"] - arch.extra_params
    assert gguf_layout(arch, "F16").elements == language_model + _gguf_beyond_transformers(config)


def _gguf_beyond_transformers(config: dict) -> int:
    """What a GGUF holds that transformers 5 does not build. Gemma 3n: the KV-shared layers' k/v
    projections and k_norm, which the checkpoint has and llama.cpp's gemma3n loader requires
    (src/models/gemma3n.cpp), and the per-layer embedding table padded from
    vocab_size_per_layer_input to vocab_size rows (conversion/gemma.py, Gemma3NModel)."""
    text = config.get("text_config", config)
    if text.get("model_type") not in ("gemma3n", "gemma3n_text"):
        return 0
    head_dim = text["head_dim"]
    shared_kv = text["num_kv_shared_layers"] * (
        2 * text["hidden_size"] * text["num_key_value_heads"] * head_dim + head_dim
    )
    padded_rows = text["vocab_size"] - text["vocab_size_per_layer_input"]
    table_width = text["num_hidden_layers"] * text["hidden_size_per_layer_input"]
    return shared_kv + padded_rows * table_width

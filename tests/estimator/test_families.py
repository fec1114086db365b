"""Family modules: registry, reading by ``architectures``, the generic reader's flag, and errors
that name a missing field in the family's own words.

Expected numbers: transformers' meta-device counts in data/transformers_param_counts.json, or
hand calculations written out below.
"""

import json
from pathlib import Path

import pytest

from calculator.estimator import (
    Architecture,
    ConfigError,
    ConfigModel,
    EstimateRequest,
    estimate,
)
from calculator.estimator.families import FAMILY_MODULES, known_model_types
from tests.conftest import VALIDATION_CONFIGS

DATA = json.loads((Path(__file__).parent / "data" / "transformers_param_counts.json").read_text())

# A small config with the standard field names under a model_type no family module registers.
# Hand count (Llama layout, untied): embedding 1000·64 + LM head 1000·64 = 128,000; per layer
# q/k/v/o 4·64·64 = 16,384, gate/up/down 3·64·128 = 24,576, two norms 128 → 41,088; two layers
# 82,176; final norm 64. Total 210,240.
UNKNOWN = {
    "model_type": "brand_new_family",
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
}


def test_every_family_module_registers_a_reader():
    assert len(FAMILY_MODULES) >= 25
    assert len(known_model_types()) >= 45
    assert {"phi", "gpt_bigcode", "gemma2", "glm4_moe", "deepseek_v32"} <= known_model_types()


def test_unknown_model_type_is_estimated_but_flagged_approximate():
    arch = Architecture.from_hf_config(UNKNOWN)
    assert arch.params_total == 210_240
    result = estimate(EstimateRequest(model=ConfigModel(config=UNKNOWN)))
    assert result.approximate is True
    assert result.approximate_reason is not None
    assert "brand_new_family" in result.approximate_reason
    assert "%" in result.approximate_reason  # says how far off such readings were


def test_known_family_is_not_flagged():
    config = json.loads((VALIDATION_CONFIGS / "phi-2.json").read_text())
    result = estimate(EstimateRequest(model=ConfigModel(config=config)))
    assert result.approximate is False
    assert result.approximate_reason is None
    # phi-2: 2,779,683,840 parameters (transformers meta-device count in the dataset).
    assert result.params_total == DATA["models"]["phi-2"]["params_total"] == 2_779_683_840


def test_phi_is_no_longer_read_as_llama():
    """The issue's report: phi-1.5 read as Llama-shaped gave 1.82 B instead of 1.42 B.
    phi-1.5 is PhiConfig's default shape (hidden 2048, 24 layers, 8192 MLP, vocabulary 51200);
    hand count: embedding 51200·2048 = 104,857,600; LM head 104,857,600 + bias 51,200; per layer
    q/k/v/dense 4·(2048² + 2048) = 16,785,408, fc1+fc2 2·2048·8192 + 8192 + 2048 = 33,564,672,
    one LayerNorm 4,096 → 50,354,176, ×24 = 1,208,500,224; final LayerNorm 4,096.
    Total 1,418,270,720."""
    config = {
        "model_type": "phi",
        "vocab_size": 51200,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
    }
    assert Architecture.from_hf_config(config).params_total == 1_418_270_720


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"model_type": "gpt_bigcode", "n_head": 16, "n_layer": 24, "vocab_size": 10}, "n_embd"),
        (
            {"model_type": "gpt_bigcode", "n_embd": 64, "n_layer": 2, "vocab_size": 10},
            "n_head",
        ),
        ({"model_type": "opt", "hidden_size": 64, "ffn_dim": 256}, "num_hidden_layers"),
        ({"model_type": "gptj", "n_embd": 64, "n_head": 4, "vocab_size": 10}, "n_layer"),
    ],
)
def test_missing_field_is_named_in_the_family_own_words(config, field):
    """A config without its width, depth or head count is a fragment, not a model: refused
    (class_defaults.DEFINING_FIELDS); every other omitted field takes the class default."""
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config(config)
    assert raised.value.field == field
    assert field in str(raised.value)


def test_gpt_bigcode_without_n_inner_uses_four_times_n_embd():
    """modeling_gpt_bigcode: inner_dim = n_inner or 4·n_embd. Hand count for n_embd 64, 4 heads
    (head 16), multi-query, 1 layer, vocabulary 100, 32 positions, tied: wte 6,400 + wpe 2,048;
    c_attn 64·(64 + 2·16) + 96 = 6,240; c_proj 64·64 + 64 = 4,160; c_fc 64·256 + 256 = 16,640;
    c_proj 256·64 + 64 = 16,448; ln_1/ln_2 256; ln_f 128. Total 52,320."""
    config = {
        "model_type": "gpt_bigcode",
        "n_embd": 64,
        "n_head": 4,
        "n_layer": 1,
        "n_positions": 32,
        "vocab_size": 100,
        "n_inner": None,
    }
    assert Architecture.from_hf_config(config).params_total == 52_320


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_hidden_layers": 10**9}, "num_hidden_layers"),
        ({"model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 32, "mlp_only_layers": 3}, "mlp_only_layers"),
    ],
)  # fmt: skip
def test_malformed_fields_are_config_errors_naming_them(change, field):
    """Readers build per-layer tuples, so an absurd depth is refused up front (no real model
    has 10,000 layers); a layer list that is not a list of indices is named."""
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config({**UNKNOWN, **change})
    assert raised.value.field == field


def _kv_cache_bytes(config_name: str, seq_len: int) -> int:
    config = json.loads((VALIDATION_CONFIGS / f"{config_name}.json").read_text())
    request = EstimateRequest(model=ConfigModel(config=config), seq_len=seq_len)
    result = estimate(request)
    assert result.approximate is False
    return result.breakdown.kv_cache


def test_minicpm3_cache_is_mla_as_transformers_keeps_it():
    """MiniCPM3-4B (validation/configs/minicpm3-4b.json, multi-head latent attention).
    transformers 5.24.0 caches MLA's latent, not per-head keys and values
    (``MiniCPM3Attention.forward`` calls ``cache.update`` on the normalised kv_lora_rank latent
    and the rotated rope key, one head each): per token and layer kv_lora_rank 256 +
    qk_rope_head_dim 32 = 288 values; 62 layers · 288 · 2 bytes (bf16) · 4096 tokens =
    146,276,352 bytes."""
    assert _kv_cache_bytes("minicpm3-4b", 4096) == 62 * (256 + 32) * 2 * 4096 == 146_276_352


def test_dbrx_reads_its_nested_attention_config():
    """DBRX Instruct (validation/configs/dbrx-instruct.json): attn_config.kv_n_heads 8, head size
    d_model 6144 / n_heads 48 = 128; K and V in each of n_layers 40 at bf16 for 4096 tokens:
    2 · 40 · 8 · 128 · 2 bytes · 4096 = 671,088,640 bytes (0.625 GiB)."""
    assert _kv_cache_bytes("dbrx-instruct", 4096) == 2 * 40 * 8 * 128 * 2 * 4096 == 671_088_640


def test_phimoe_keeps_a_gqa_cache_and_counts_its_biases():
    """Phi-3.5-MoE (validation/configs/phi-3.5-moe-instruct.json): 8 KV heads of 128 in 32
    layers: 2 · 32 · 8 · 128 · 2 bytes · 4096 = 536,870,912 bytes (0.5 GiB). Its attention and
    LM-head biases by hand: per layer q/k/v 4096 + 1024 + 1024 and o 4096 = 10,240, and the LM
    head's 32,064; transformers (meta device, transformers 5.24) builds 41,873,153,344 parameters
    with them and 41,872,793,600 with both flags false: 359,744 = 32 · 10,240 + 32,064."""
    assert _kv_cache_bytes("phi-3.5-moe-instruct", 4096) == 2 * 32 * 8 * 128 * 2 * 4096
    config = json.loads((VALIDATION_CONFIGS / "phi-3.5-moe-instruct.json").read_text())
    unbiased = Architecture.from_hf_config(
        config | {"attention_bias": False, "lm_head_bias": False}
    )
    assert Architecture.from_hf_config(config).params_total - unbiased.params_total == (
        32 * 10_240 + 32_064
    )
    assert unbiased.params_total == 41_872_793_600


def test_kimi_linear_keeps_kv_only_on_its_mla_layers():
    """Kimi-Linear-48B-A3B (validation/configs/kimi-linear-48b-a3b.json): 7 MLA layers
    (1-based 4, 8, ..., 24, 27) and 20 KDA layers. MLA as transformers 5.24.0 keeps it, the
    latent (``KimiLinearAttention`` caches kv_lora_rank 512 + qk_rope_head_dim 64 per token and
    layer): 7 · 576 · 2 bytes · 4096 tokens = 33,030,144 bytes. Each KDA layer keeps 32 heads · 128 · 128 fp32 values (2,097,152 bytes)
    and a conv window of 3 · 4096 channels · 4 taps in bf16 (98,304 bytes): 20 · 2,195,456 =
    43,909,120 bytes, whatever the sequence length."""
    config = json.loads((VALIDATION_CONFIGS / "kimi-linear-48b-a3b.json").read_text())
    result = estimate(EstimateRequest(model=ConfigModel(config=config), seq_len=4096))
    kinds = {kind.kind: kind for kind in result.layer_kinds}
    assert kinds["attention"].layers == 7
    assert kinds["attention"].cache_bytes == 7 * (512 + 64) * 2 * 4096 == 33_030_144
    assert kinds["gated_deltanet"].layers == 20
    assert kinds["gated_deltanet"].cache_bytes == 20 * (32 * 128 * 128 * 4 + 3 * 4096 * 4 * 2)
    assert result.breakdown.kv_cache == 33_030_144 + 43_909_120


def test_olmo1_norms_hold_no_parameters():
    """OLMo-1B-hf (validation/configs/olmo-1b-hf.json): ``OlmoLayerNorm`` has no weight or bias.
    By hand: embedding 50304 · 2048 = 103,022,592 (tied, no LM head); per layer q/k/v/o
    4 · 2048² = 16,777,216 and gate/up/down 3 · 2048 · 8192 = 50,331,648; 16 layers
    1,073,741,824. Total 1,176,764,416, transformers' count in the dataset."""
    config = json.loads((VALIDATION_CONFIGS / "olmo-1b-hf.json").read_text())
    by_hand = 50304 * 2048 + 16 * (4 * 2048 * 2048 + 3 * 2048 * 8192)
    assert Architecture.from_hf_config(config).params_total == by_hand == 1_176_764_416
    assert DATA["models"]["olmo-1b-hf"]["params_total"] == by_hand


def test_olmo_hybrid_keeps_kv_on_one_layer_in_four():
    """OlmoHybridConfig's defaults (validation/configs/defaults-olmo_hybrid.json: 32 layers,
    hidden 3840, 30 heads of 128, no published config found): full attention on layers 3, 7,
    ..., 31 (8 layers) keeps 2 · 30 · 128 · 2 bytes per token; the 24 Gated DeltaNet layers keep
    30 value heads · 96 (0.75 · 3840 / 30) · 192 fp32 values and a conv window of
    (2 · 2880 + 5760) channels · 4 taps in bf16. At 1024 tokens: 8 · 2 · 30 · 128 · 2 · 1024
    = 125,829,120 and 24 · (30 · 96 · 192 · 4 + 11,520 · 4 · 2) = 55,296,000 bytes."""
    config = json.loads((VALIDATION_CONFIGS / "defaults-olmo_hybrid.json").read_text())
    result = estimate(EstimateRequest(model=ConfigModel(config=config), seq_len=1024))
    kinds = {kind.kind: kind for kind in result.layer_kinds}
    assert kinds["attention"].layers == 8
    assert kinds["attention"].cache_bytes == 8 * 2 * 30 * 128 * 2 * 1024 == 125_829_120
    assert kinds["gated_deltanet"].cache_bytes == 24 * (30 * 96 * 192 * 4 + 11_520 * 4 * 2)
    assert kinds["gated_deltanet"].cache_bytes == 55_296_000


def test_jetmoe_counts_its_mixture_of_attention_by_hand():
    """JetMoeConfig's defaults (validation/configs/defaults-jetmoe.json, no published config
    found): hidden 2048, 12 layers, 16 KV heads of 128 (kv width 2048), 8 experts, top 2,
    intermediate 5632, vocab 32000, tied. Per layer by hand: kv_proj 2048 · 4096 = 8,388,608;
    MoA experts 8 · 2 · 2048 · 2048 = 67,108,864, its bias 2048 and router 2048 · 8 = 16,384;
    MLP experts 8 · 3 · 2048 · 5632 = 276,824,064, bias 2048, router 16,384; two norms 4096.
    12 layers + embedding 65,536,000 + final norm 2048 = 4,293,888,000 (transformers' count).
    The KV cache holds the 16 shared KV heads: 2 · 12 · 2048 · 2 bytes per token."""
    config = json.loads((VALIDATION_CONFIGS / "defaults-jetmoe.json").read_text())
    layer = 8_388_608 + 67_108_864 + 2048 + 16_384 + 276_824_064 + 2048 + 16_384 + 4096
    by_hand = 12 * layer + 32000 * 2048 + 2048
    assert Architecture.from_hf_config(config).params_total == by_hand == 4_293_888_000
    assert DATA["models"]["defaults-jetmoe"]["params_total"] == by_hand
    assert _kv_cache_bytes("defaults-jetmoe", 1024) == 2 * 12 * 2048 * 2 * 1024


def test_bamba_keeps_kv_only_at_its_attention_indices():
    """validation/configs/defaults-bamba-attn-9-18-27.json (BambaConfig's defaults with Bamba-9B's
    attention indices 9, 18, 27): those 3 layers keep 2 · 8 KV heads · 128 · 2 bytes per token;
    the 29 Mamba-2 layers keep 128 heads · 64 · 128 fp32 state values and a conv window of
    (8192 + 2 · 128) channels · 4 taps in bf16, whatever the length."""
    config = json.loads((VALIDATION_CONFIGS / "defaults-bamba-attn-9-18-27.json").read_text())
    result = estimate(EstimateRequest(model=ConfigModel(config=config), seq_len=1024))
    kinds = {kind.kind: kind for kind in result.layer_kinds}
    assert kinds["attention"].layers == 3
    assert kinds["attention"].cache_bytes == 3 * 2 * 8 * 128 * 2 * 1024
    assert kinds["mamba2"].layers == 29
    assert kinds["mamba2"].cache_bytes == 29 * (128 * 64 * 128 * 4 + (8192 + 256) * 4 * 2)


def test_hunyuan_moe_reads_a_per_layer_top_k_list_of_equal_entries():
    """Hunyuan-A13B's published config (validation/configs/hunyuan-a13b.json) writes ``moe_topk``
    as 32 eights, one per layer; transformers takes ``moe_topk[layer_idx]`` (HunYuanMoEV1Gate), so
    8 experts per token, and its count is the dataset's. Differing entries have no single value."""
    config = json.loads((VALIDATION_CONFIGS / "hunyuan-a13b.json").read_text())
    arch = Architecture.from_hf_config(config)
    assert config["moe_topk"] == [8] * 32
    assert arch.experts_per_token == 8
    assert arch.params_total == DATA["models"]["hunyuan-a13b"]["params_total"]
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config({**config, "moe_topk": [8] * 31 + [4]})
    assert raised.value.field == "moe_topk"


def test_minimax_m1_as_released_reads_its_attn_type_list():
    """MiniMax-M1's config.json as released for its remote code (validation/configs/SOURCES.md,
    minimax-m1.json): model_type "minimax_m1" and attn_type_list, 0 for a lightning-attention
    layer and 1 for a softmax one, seven 0s then a 1, ten times. transformers cannot build that
    model_type, so it counted the same config in its own minimax layout (those four edits undone
    here): 456,089,655,296 parameters, the row minimax-m1 in transformers_param_counts.json. Read
    as released, the count is the same and is not flagged approximate, and only the 10 softmax
    layers keep a KV cache."""
    converted = json.loads((VALIDATION_CONFIGS / "minimax-m1.json").read_text())
    released = {key: value for key, value in converted.items() if key != "layer_types"}
    released["model_type"] = "minimax_m1"
    released["architectures"] = ["MiniMaxM1ForCausalLM"]
    released["attn_type_list"] = [
        1 if kind == "full_attention" else 0 for kind in converted["layer_types"]
    ]
    assert released["attn_type_list"] == ([0] * 7 + [1]) * 10
    arch = Architecture.from_hf_config(released)
    assert arch.approximate_reason is None
    assert arch.params_total == DATA["models"]["minimax-m1"]["params_total"] == 456_089_655_296
    result = estimate(EstimateRequest(model=ConfigModel(config=released), seq_len=1024))
    kinds = {kind.kind: kind for kind in result.layer_kinds}
    assert kinds["attention"].layers == 10
    assert kinds["lightning"].layers == 70


def test_minimax_remote_code_config_without_attn_type_list_names_it():
    converted = json.loads((VALIDATION_CONFIGS / "minimax-m1.json").read_text())
    released = {key: value for key, value in converted.items() if key != "layer_types"}
    released["model_type"] = "minimax_text_01"
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config(released)
    assert raised.value.field == "attn_type_list"

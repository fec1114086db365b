"""What state-space / linear-attention layers and vision towers add to an estimate.

Expected numbers are hand calculations written out in each test from the shapes that
transformers' cache (``cache_utils.LinearAttentionLayer``) and processors use.
"""

from calculator.estimator import ConfigModel, EstimateRequest, estimate

# A tiny Qwen3-Next: 3 Gated DeltaNet layers, then one gated attention layer.
QWEN3_NEXT = {
    "model_type": "qwen3_next",
    "vocab_size": 1000,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "num_experts": 0,
}


def test_hybrid_keeps_kv_only_on_attention_layers_and_a_fixed_state_elsewhere():
    """Gated DeltaNet layer, per sequence: conv over 2·(4·32) + 8·32 = 512 channels × 4 taps =
    2,048 bf16 elements (4,096 B) + state 8 heads × 32 × 32 = 8,192 fp32 (32,768 B) = 36,864 B;
    × batch 2 × 3 layers = 221,184 B. Attention layer: 2 KV heads × (64 + 64) × 2 B = 512 B per
    token × 1,000 tokens × batch 2 = 1,024,000 B. Cache total 1,245,184 B."""
    result = estimate(
        EstimateRequest(model=ConfigModel(config=QWEN3_NEXT), seq_len=1000, batch_size=2)
    )
    kinds = {kind.kind: kind for kind in result.layer_kinds}
    assert kinds["gated_deltanet"].layers == 3
    assert kinds["gated_deltanet"].holds == "recurrent_state"
    assert kinds["gated_deltanet"].cache_bytes == 221_184
    assert kinds["attention"].holds == "kv_cache"
    assert kinds["attention"].cache_bytes == 1_024_000
    assert result.breakdown.kv_cache == 1_245_184


def test_recurrent_state_does_not_grow_with_the_sequence():
    short = estimate(EstimateRequest(model=ConfigModel(config=QWEN3_NEXT), seq_len=100))
    long = estimate(EstimateRequest(model=ConfigModel(config=QWEN3_NEXT), seq_len=10_000))
    state = {k.kind: k.cache_bytes for k in short.layer_kinds}["gated_deltanet"]
    assert {k.kind: k.cache_bytes for k in long.layer_kinds}["gated_deltanet"] == state


def test_mamba_has_no_kv_cache():
    """Mamba, hidden 64, expand 2 (I = 128), state 16, kernel 4, 2 layers, batch 1:
    conv 128 × 4 = 512 bf16 (1,024 B) + ssm 128 × 16 = 2,048 fp32 (8,192 B) = 9,216 B per layer,
    18,432 B for two."""
    config = {
        "model_type": "mamba",
        "vocab_size": 100,
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "state_size": 16,
        "expand": 2,
        "conv_kernel": 4,
    }
    result = estimate(EstimateRequest(model=ConfigModel(config=config), seq_len=4096))
    assert [(k.kind, k.holds) for k in result.layer_kinds] == [("mamba", "recurrent_state")]
    assert result.breakdown.kv_cache == 18_432


def test_nemotron_h_mlp_layers_hold_nothing():
    config = {
        "model_type": "nemotron_h",
        "vocab_size": 100,
        "hidden_size": 64,
        "layers_block_type": ["linear_attention", "mlp", "full_attention", "mlp"],
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 128,
        "mamba_num_heads": 4,
        "mamba_head_dim": 32,
        "n_groups": 1,
        "ssm_state_size": 16,
    }
    result = estimate(EstimateRequest(model=ConfigModel(config=config)))
    holds = {k.kind: (k.layers, k.holds) for k in result.layer_kinds}
    assert holds == {
        "mamba2": (1, "recurrent_state"),
        "mlp": (2, "nothing"),
        "attention": (1, "kv_cache"),
    }


QWEN3_VL_TINY = {
    "model_type": "qwen3_vl",
    "text_config": {
        "model_type": "qwen3_vl_text",
        "vocab_size": 1000,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
    },
    "vision_config": {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": 64,
        "num_position_embeddings": 16,
        "deepstack_visual_indexes": [],
    },
}


def test_images_add_their_tokens_to_the_sequence():
    """Qwen3-VL: 16-pixel patches merged 2 × 2. A 1024 × 1024 image (already a multiple of
    32) is 64 × 64 = 4,096 patches → 1,024 tokens. Two images add 2,048 tokens, so the KV cache
    of seq_len 100 + 2,048 tokens: 2 layers × 2 KV heads × (16 + 16) × 2 B = 256 B per token ×
    2,148 = 549,888 B."""
    one = estimate(EstimateRequest(model=ConfigModel(config=QWEN3_VL_TINY), seq_len=100))
    assert one.image_tokens == 1024
    two = estimate(
        EstimateRequest(model=ConfigModel(config=QWEN3_VL_TINY), seq_len=100, images_per_request=2)
    )
    assert two.image_tokens == 2048
    assert two.breakdown.kv_cache == 549_888
    none = estimate(
        EstimateRequest(model=ConfigModel(config=QWEN3_VL_TINY), seq_len=100, images_per_request=0)
    )
    assert none.image_tokens == 0
    assert none.breakdown.kv_cache == 256 * 100


def test_llama4_chunked_layers_hold_the_prompt_after_prefill():
    """Llama 4: RoPE layers use chunked attention, cached by transformers' DynamicCache in a
    DynamicSlidingWindowLayer (cache_utils.py, 5.24.0: "sliding and chunked are the same"), which
    keeps its last attention_chunk_size tokens as a view of the whole prompt's K/V, so after the
    prefill every layer still holds all of it. 4 layers; per token per layer: 2 KV heads ×
    (16 + 16) × 2 B = 128 B. seq 100: 4 × 100 × 128 = 51,200 B (the chunk alone would be
    3 × 16 × 128 + 1 × 100 × 128 = 18,944 B)."""
    config = {
        "model_type": "llama4_text",
        "vocab_size": 100,
        "hidden_size": 64,
        "intermediate_size": 32,
        "intermediate_size_mlp": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_local_experts": 2,
        "attention_chunk_size": 16,
        "no_rope_layer_interval": 4,
    }
    result = estimate(EstimateRequest(model=ConfigModel(config=config), seq_len=100))
    assert result.breakdown.kv_cache == 51_200


# A tiny MiniMax-Text-01-shaped model: softmax attention on layer 0, lightning attention on 1.
MINIMAX = {
    "model_type": "minimax",
    "vocab_size": 1000,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "layer_types": ["full_attention", "linear_attention"],
}


def test_lightning_attention_keeps_a_fixed_state_and_no_kv():
    """Lightning layer (modeling_minimax.py ``attn_weights_inter``): 4 heads × 64 × 64 = 16,384
    elements in the model dtype (bf16, 2 B) = 32,768 B per sequence × batch 2 = 65,536 B.
    Attention layer: 2 KV heads × (64 + 64) × 2 B = 512 B per token × 1,000 tokens × batch 2 =
    1,024,000 B. Cache total 1,089,536 B."""
    result = estimate(
        EstimateRequest(model=ConfigModel(config=MINIMAX), seq_len=1000, batch_size=2)
    )
    kinds = {kind.kind: kind for kind in result.layer_kinds}
    assert kinds["lightning"].layers == 1
    assert kinds["lightning"].holds == "recurrent_state"
    assert kinds["lightning"].cache_bytes == 65_536
    assert kinds["attention"].cache_bytes == 1_024_000
    assert result.breakdown.kv_cache == 1_089_536

"""MiniCPM3 (``modeling_minicpm3.py``, ``configuration_minicpm3.py``, transformers 5.24)."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.deepseek import read_deepseek
from calculator.estimator.families.registry import register


@register("minicpm3")
def read_minicpm3(c: ConfigFields) -> Architecture:
    """DeepSeek-V2's multi-head latent attention (``MiniCPM3Attention``: q_a/q_b through a
    ``q_lora_rank`` latent, kv_a_proj_with_mqa, kv_b_proj) over Llama's dense gated MLP in every
    layer. ``MiniCPM3Config`` derives ``v_head_dim`` as ``hidden_size / num_attention_heads``
    when the config leaves it out, and ties the embeddings unless told otherwise. With
    ``attention_bias`` the q_a, kv_a and o projections carry biases; the KV cache keeps the
    latent and the rotary key, as DeepSeek's does."""
    hidden = c.positive("hidden_size")
    heads = c.positive("num_attention_heads")
    defaults = {
        "v_head_dim": hidden // heads,
        "tie_word_embeddings": True,
        "qk_nope_head_dim": 64,
        "qk_rope_head_dim": 32,
    }
    raw = {**defaults, **{k: v for k, v in c.raw.items() if v is not None}}
    fields = ConfigFields(raw)
    arch = read_deepseek(fields)
    if not fields.flag("attention_bias", False):
        return arch
    per_layer = (arch.q_lora_rank or 0) + (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0)
    return arch.model_copy(update={"other_params": arch.num_layers * per_layer})

"""Falcon (``modeling_falcon.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("falcon")
def read_falcon(c: ConfigFields) -> Architecture:
    """Falcon-7B (multi-query, one LayerNorm) and the new decoder architecture (40B/180B)."""
    fields = core_fields(c)
    heads = fields["num_attention_heads"]
    new_arch = c.flag("new_decoder_architecture", False)
    if new_arch:
        kv = c.positive("num_kv_heads", "num_key_value_heads", default=heads)
    elif c.flag("multi_query", True):
        kv = 1
    else:
        kv = heads
    hidden = fields["hidden_size"]
    parallel = c.flag("parallel_attn", True)
    fields.update(
        num_kv_heads=kv,
        intermediate_size=c.positive("ffn_hidden_size", default=4 * hidden),
        hidden_act=c.text("activation", "gelu"),
        mlp_gated=False,
        mlp_bias=c.flag("bias", False),
        qkv_bias=c.flag("bias", False),
        o_bias=c.flag("bias", False),
        norm_kind="layer",
        parallel_block=parallel or new_arch,
        # Falcon-40B/180B (new architecture, two layer norms by default) vs Falcon-7B (one).
        pre_norms_per_layer=2
        if (new_arch and c.integer("num_ln_in_parallel_attn", default=2) == 2) or not parallel
        else 1,
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        hidden_dropout=c.number("hidden_dropout"),
        attention_dropout=c.number("attention_dropout"),
    )
    return Architecture(**fields)

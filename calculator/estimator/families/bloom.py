"""BigScience BLOOM (``modeling_bloom.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("bloom")
def read_bloom(c: ConfigFields) -> Architecture:
    """ALiBi (no position table), LayerNorm after the embedding, biases everywhere, 4·h MLP."""
    c.require("vocab_size")
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    fields.update(
        num_layers=c.positive("n_layer", "num_hidden_layers"),
        intermediate_size=4 * hidden,
        hidden_act="gelu",
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        norm_kind="layer",
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        other_params=2 * hidden,  # word_embeddings_layernorm
        hidden_dropout=c.number("hidden_dropout"),
        attention_dropout=c.number("attention_dropout"),
    )
    return Architecture(**fields)

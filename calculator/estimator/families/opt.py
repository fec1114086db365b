"""Meta OPT (``modeling_opt.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("opt")
def read_opt(c: ConfigFields) -> Architecture:
    """Learned positions with an offset of 2, LayerNorm, biases; OPT-350m projects a narrower
    embedding (``word_embed_proj_dim``) in and out and has no final norm."""
    c.require("hidden_size", "ffn_dim", "num_hidden_layers", "num_attention_heads", "vocab_size")
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    embed = c.positive("word_embed_proj_dim", default=hidden)
    bias = c.flag("enable_bias", True)
    positions = c.positive("max_position_embeddings") + 2
    pre_norm = c.flag("do_layer_norm_before", True)
    if not c.flag("layer_norm_elementwise_affine", True):
        raise ConfigError(
            "OPT without affine layer norms is not supported.", "layer_norm_elementwise_affine"
        )
    fields.update(
        intermediate_size=c.positive("ffn_dim"),
        hidden_act=c.text("activation_function", "relu"),
        mlp_gated=False,
        mlp_bias=bias,
        qkv_bias=bias,
        o_bias=bias,
        norm_kind="layer",
        final_norm=pre_norm and not c.flag("_remove_final_layer_norm", False),
        learned_positions=positions,
        embedding_width=embed if embed != hidden else None,
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        # project_in / project_out (bias-free) when the embedding is narrower than the model.
        other_params=2 * embed * hidden if embed != hidden else 0,
        hidden_dropout=c.number("dropout"),
        attention_dropout=c.number("attention_dropout"),
    )
    return Architecture(**fields)

"""StarCoder / SantaCoder (``modeling_gpt_bigcode.py``) and StarCoder2 (``modeling_starcoder2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("gpt_bigcode")
def read_gpt_bigcode(c: ConfigFields) -> Architecture:
    """GPT-2's layout with multi-query attention (one key/value head) when ``multi_query``."""
    c.require("n_embd", "n_head", "n_layer", "vocab_size", "n_positions")
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    fields.update(
        num_kv_heads=1 if c.flag("multi_query", True) else fields["num_attention_heads"],
        intermediate_size=c.positive("n_inner", default=4 * hidden),
        hidden_act=c.text("activation_function", "gelu_pytorch_tanh"),
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        norm_kind="layer",
        learned_positions=c.positive("n_positions"),
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        hidden_dropout=c.number("resid_pdrop"),
        embedding_dropout=c.number("embd_pdrop"),
    )
    return Architecture(**fields)


@register("starcoder2")
def read_starcoder2(c: ConfigFields) -> Architecture:
    """GQA with biases (``use_bias``), LayerNorm, a non-gated c_fc/c_proj MLP, sliding window."""
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    bias = c.flag("use_bias", True)
    window = c.integer("sliding_window", default=0) or None
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        hidden_act=c.text("hidden_act", "gelu_pytorch_tanh"),
        mlp_gated=False,
        mlp_bias=bias,
        qkv_bias=bias,
        o_bias=bias,
        norm_kind="layer",
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        hidden_dropout=c.number("residual_dropout"),
        embedding_dropout=c.number("embedding_dropout"),
        layer_types=("sliding",) * fields["num_layers"] if window else (),
        sliding_window=window,
    )
    return Architecture(**fields)

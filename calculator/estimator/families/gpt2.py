"""GPT-2 (``modeling_gpt2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("gpt2")
def read_gpt2(c: ConfigFields) -> Architecture:
    """Learned positions, LayerNorm, biases everywhere, a 4·h non-gated MLP unless ``n_inner``."""
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    fields.update(
        intermediate_size=c.positive("n_inner", default=4 * hidden),
        hidden_act=c.text("activation_function", "gelu_new"),
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        norm_kind="layer",
        learned_positions=c.positive("n_positions", "max_position_embeddings"),
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        attention_dropout=c.number("attn_pdrop"),
        hidden_dropout=c.number("resid_pdrop"),
        embedding_dropout=c.number("embd_pdrop"),
    )
    return Architecture(**fields)

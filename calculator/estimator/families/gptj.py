"""EleutherAI GPT-J (``modeling_gptj.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("gptj")
def read_gptj(c: ConfigFields) -> Architecture:
    """Attention and MLP in parallel behind one LayerNorm; no attention biases; biased LM head."""
    c.require("n_embd", "n_head", "n_layer", "vocab_size")
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    fields.update(
        intermediate_size=c.positive("n_inner", default=4 * hidden),
        hidden_act=c.text("activation_function", "gelu_new"),
        mlp_gated=False,
        mlp_bias=True,
        norm_kind="layer",
        pre_norms_per_layer=1,
        parallel_block=True,
        lm_head_bias=True,
        tie_word_embeddings=c.flag("tie_word_embeddings", False),
        hidden_dropout=c.number("resid_pdrop"),
        embedding_dropout=c.number("embd_pdrop"),
    )
    return Architecture(**fields)

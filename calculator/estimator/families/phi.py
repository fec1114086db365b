"""Phi-1 / Phi-1.5 / Phi-2 (``modeling_phi.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("phi")
def read_phi(c: ConfigFields) -> Architecture:
    """One LayerNorm feeding attention and MLP in parallel; biases everywhere, LM head included."""
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        hidden_act=c.text("hidden_act", "gelu_new"),
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        # qk_layernorm: nn.LayerNorm(head_dim) on queries and on keys.
        qk_norm="per_head" if c.flag("qk_layernorm", False) else "none",
        qk_norm_bias=True,
        norm_kind="layer",
        pre_norms_per_layer=1,
        parallel_block=True,
        lm_head_bias=True,
        hidden_dropout=c.number("resid_pdrop"),
        embedding_dropout=c.number("embd_pdrop"),
    )
    return Architecture(**fields)

"""Stability AI StableLM (``modeling_stablelm.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("stablelm")
def read_stablelm(c: ConfigFields) -> Architecture:
    """LayerNorm (with bias), gated MLP without bias, q/k/v bias when ``use_qkv_bias``, optional
    parallel residual (one norm) and per-head bias-free LayerNorms on q and k."""
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    parallel = c.flag("use_parallel_residual", False)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        qkv_bias=c.flag("use_qkv_bias", False),
        qk_norm="full" if c.flag("qk_layernorm", False) else "none",
        norm_kind="layer",
        pre_norms_per_layer=1 if parallel else 2,
        parallel_block=parallel,
        tie_word_embeddings=c.flag("tie_word_embeddings", False),
        hidden_dropout=c.number("hidden_dropout"),
    )
    return Architecture(**fields)

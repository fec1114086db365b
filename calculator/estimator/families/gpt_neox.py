"""GPT-NeoX / Pythia (``modeling_gpt_neox.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("gpt_neox")
def read_gpt_neox(c: ConfigFields) -> Architecture:
    """LayerNorm, biased fused qkv and MLP, attention and MLP in parallel by default."""
    fields = core_fields(c)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        hidden_act=c.text("hidden_act", "gelu"),
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=c.flag("attention_bias", True),
        o_bias=c.flag("attention_bias", True),
        norm_kind="layer",
        parallel_block=c.flag("use_parallel_residual", True),
        hidden_dropout=c.number("hidden_dropout"),
    )
    return Architecture(**fields)

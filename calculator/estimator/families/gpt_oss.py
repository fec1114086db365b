"""gpt-oss (``modeling_gpt_oss.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register


@register("gpt_oss")
def read_gpt_oss(c: ConfigFields) -> Architecture:
    """Alternating sliding/full attention with sinks, biased experts on every layer."""
    fields = core_fields(c)
    layer_types, window = layer_types_from(c, fields["num_layers"])
    experts = c.positive("num_local_experts", "num_experts")
    inter = c.positive("intermediate_size")
    fields.update(
        intermediate_size=inter,
        qkv_bias=c.flag("attention_bias", True),
        o_bias=c.flag("attention_bias", True),
        attention_sinks=True,
        num_experts=experts,
        experts_per_token=c.positive("num_experts_per_tok", "experts_per_token"),
        moe_intermediate_size=inter,
        router_bias=True,
        expert_bias=True,
        moe_layers=tuple(range(fields["num_layers"])),
        layer_types=layer_types,
        sliding_window=window,
    )
    return Architecture(**fields)

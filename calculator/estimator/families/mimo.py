"""Xiaomi MiMo-V2-Flash (``modeling_mimo_v2_flash.py``, ``configuration_mimo_v2_flash.py``):
hybrid full / sliding-window attention with asymmetric q·k (``head_dim``) and value
(``v_head_dim``) heads, and a MoE of routed experts after one dense layer."""

from __future__ import annotations

from typing import Literal

from calculator.estimator.architecture import Architecture, ConfigFields, core_fields
from calculator.estimator.families.registry import register


def _layer_types(c: ConfigFields, layers: int) -> tuple[Literal["full", "sliding"], ...]:
    """``layer_types`` when listed, else MiMoV2FlashConfig's default: full attention on the first
    layer and every sixth, sliding elsewhere. (Transformers does not read the published
    ``hybrid_layer_pattern``; on MiMo-V2-Flash both give the same layers.)"""
    raw = c.raw.get("layer_types")
    if isinstance(raw, list) and len(raw) == layers:
        return tuple("sliding" if "sliding" in str(kind) else "full" for kind in raw)
    return tuple("full" if i == 0 or not (i + 1) % 6 else "sliding" for i in range(layers))


@register("mimo_v2_flash")
def read_mimo_v2_flash(c: ConfigFields) -> Architecture:
    """Sliding-window layers have twice ``num_key_value_heads`` and one learned attention sink per
    query head; full layers have neither (``MiMoV2FlashAttention``; the published
    ``swa_num_key_value_heads`` is not read). The extra k/v projections and sinks of the sliding
    layers are counted in ``other_params``; the Architecture keeps the full layers' shape, so the
    sliding layers' (window-capped) cache is taken with the full layers' KV heads."""
    fields = core_fields(c)
    layers: int = fields["num_layers"]
    hidden: int = fields["hidden_size"]
    heads: int = fields["num_attention_heads"]
    kv_heads: int = fields["num_kv_heads"]
    head_dim = c.positive("head_dim", default=192)
    v_head_dim = c.positive("v_head_dim", default=128)
    types = _layer_types(c, layers)
    window = c.integer("sliding_window_size", default=0) + 1 if c.has("sliding_window_size") else 0
    window = window or c.positive("sliding_window", default=129)
    mlp_types = c.raw.get("mlp_layer_types")
    if isinstance(mlp_types, list) and len(mlp_types) == layers:
        moe = tuple(i for i, kind in enumerate(mlp_types) if kind == "sparse")
    else:
        moe = tuple(range(1, layers))
    bias = c.flag("attention_bias", False)
    sliding = sum(1 for kind in types if kind == "sliding")
    extra_kv = kv_heads * (head_dim + v_head_dim)  # the sliding layers' second set of k/v heads
    per_sliding = hidden * extra_kv + (extra_kv if bias else 0) + heads
    fields.update(
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        intermediate_size=c.positive("intermediate_size"),
        qkv_bias=bias,
        layer_types=types,
        sliding_window=window if sliding else None,
        num_experts=c.positive("n_routed_experts", "num_local_experts"),
        experts_per_token=c.positive("num_experts_per_tok"),
        moe_intermediate_size=c.positive("moe_intermediate_size"),
        moe_layers=moe,
        other_params=sliding * per_sliding,
    )
    return Architecture(**fields)

"""Poolside Laguna (``modeling_laguna.py``, ``configuration_laguna.py``, transformers 5.24.0):
Llama-shaped GQA with per-head q/k RMSNorms, a sigmoid output gate (``g_proj``), a head count
per layer (``num_attention_heads_per_layer``: more query heads on the sliding-window layers),
sliding and full layers (``layer_types``), and a MoE on the ``"sparse"`` entries of
``mlp_layer_types`` (routed experts, one shared expert, a router with a score-correction bias)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register


def _attention_params(
    hidden: int, heads: int, kv_heads: int, head_dim: int, gate: int, bias: bool
) -> int:
    """``LagunaAttention``: q/o on ``heads``·head_dim, k/v on the KV heads (``attention_bias``
    on all four), q_norm and k_norm of head_dim, and g_proj hidden → ``gate`` (bias-free)."""
    q, kv = heads * head_dim, kv_heads * head_dim
    params = hidden * (q + 2 * kv) + q * hidden + 2 * head_dim + hidden * gate
    if bias:
        params += q + 2 * kv + hidden
    return params


@register("laguna")
def read_laguna(c: ConfigFields) -> Architecture:
    """Every omitted field is LagunaConfig's default (``class_defaults``); ``__post_init__``
    fills ``mlp_layer_types`` (dense first layer, then sparse), ``num_attention_heads_per_layer``
    (``num_attention_heads`` everywhere) and ``layer_types`` (full everywhere). The gate is one
    scalar per head when ``gating`` is ``true`` or ``"per-head"``, else one per query channel."""
    fields = core_fields(c)
    layers, hidden = fields["num_layers"], fields["hidden_size"]
    heads, kv_heads = fields["num_attention_heads"], fields["num_kv_heads"]
    head_dim = fields["head_dim"]
    per_layer = c.integers("num_attention_heads_per_layer") or [heads] * layers
    mlp_types = c.raw.get("mlp_layer_types") or ["dense"] + ["sparse"] * (layers - 1)
    if len(per_layer) != layers or len(mlp_types) != layers:
        raise ConfigError(
            "num_attention_heads_per_layer and mlp_layer_types must list every layer.",
            "mlp_layer_types",
        )
    if any(h <= 0 or h % kv_heads for h in per_layer):
        raise ConfigError(
            "num_attention_heads_per_layer must be positive multiples of num_key_value_heads.",
            "num_attention_heads_per_layer",
        )
    gating = c.raw.get("gating", True)
    per_head_gate = gating is True or gating == "per-head"
    bias = c.flag("attention_bias", False)

    def attention(h: int) -> int:
        return _attention_params(
            hidden, h, kv_heads, head_dim, h if per_head_gate else h * head_dim, bias
        )

    # The shared layout holds the attention of ``heads`` query heads; layers with another head
    # count add the difference.
    extra_attention = sum(attention(h) - attention(heads) for h in per_layer)
    layer_types, window = layer_types_from(c, layers)
    moe_inter = c.positive("moe_intermediate_size")
    experts = c.positive("num_experts")
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        qkv_bias=bias,
        o_bias=bias,
        qk_norm="per_head",
        attention_block_params=attention(heads),
        layer_types=layer_types,
        sliding_window=window,
        num_experts=experts,
        experts_per_token=c.positive("num_experts_per_tok"),
        moe_intermediate_size=moe_inter,
        shared_expert_intermediate_size=c.integer("shared_expert_intermediate_size", default=0),
        num_shared_experts=1 if c.integer("shared_expert_intermediate_size", default=0) else 0,
        # LagunaTopKRouter.e_score_correction_bias: a parameter of one entry per expert.
        router_bias=True,
        moe_layers=tuple(i for i, kind in enumerate(mlp_types) if kind == "sparse"),
        other_params=extra_attention,
    )
    return Architecture(**fields)

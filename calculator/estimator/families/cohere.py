"""Command R (``modeling_cohere.py``) and Command R7B / Command A (``modeling_cohere2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register


@register("cohere", "cohere2")
def read_cohere(c: ConfigFields) -> Architecture:
    """Parallel attention and MLP behind one bias-free LayerNorm; tied embeddings.

    Cohere's LayerNorm has a weight and no bias, so it counts like an RMSNorm; ``use_qk_norm``
    adds such a norm over every query and key head. Cohere 2 interleaves sliding-window layers.
    """
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    bias = c.flag("attention_bias", False)
    layer_types, window = layer_types_from(c, fields["num_layers"])
    if not layer_types and fields["model_type"] == "cohere2" and c.has("sliding_window"):
        pattern = c.positive("sliding_window_pattern", default=4)
        layer_types = tuple(
            "full" if (i + 1) % pattern == 0 else "sliding" for i in range(fields["num_layers"])
        )
        window = c.integer("sliding_window")
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        qkv_bias=bias,
        o_bias=bias,
        qk_norm="full" if c.flag("use_qk_norm", False) else "none",
        pre_norms_per_layer=1,
        parallel_block=True,
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        layer_types=layer_types,
        sliding_window=window,
    )
    return Architecture(**fields)


@register("cohere2_moe")
def read_cohere2_moe(c: ConfigFields) -> Architecture:
    """Command A MoE (``modeling_cohere2_moe.py``): Cohere 2's parallel block with the MLP of the
    layers ``mlp_layer_types`` marks "sparse" (else from ``first_k_dense_replace`` on) replaced by
    ``num_experts`` routed experts of ``intermediate_size`` plus ``num_shared_experts`` ×
    ``intermediate_size`` of shared expert; the dense prefix layers use
    ``prefix_dense_intermediate_size`` when set."""
    arch = read_cohere(ConfigFields({**c.raw, "model_type": "cohere2"}))
    layers = arch.num_layers
    types = c.raw.get("mlp_layer_types")
    if isinstance(types, list) and len(types) == layers:
        moe = tuple(i for i, kind in enumerate(types) if kind == "sparse")
    else:
        moe = tuple(range(c.integer("first_k_dense_replace", default=0), layers))
    inter = c.positive("intermediate_size")
    shared = c.integer("num_shared_experts", default=0)
    return arch.model_copy(
        update={
            "model_type": "cohere2_moe",
            "intermediate_size": c.positive("prefix_dense_intermediate_size", default=inter),
            "num_experts": c.positive("num_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": inter,
            "num_shared_experts": shared,
            "shared_expert_intermediate_size": inter * shared,
            "moe_layers": moe,
        }
    )

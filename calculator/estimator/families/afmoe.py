"""Arcee Trinity (``modeling_afmoe.py``, ``configuration_afmoe.py``): gated attention (a sigmoid
gate per query channel, ``gate_proj``) with per-head q/k RMSNorms, four RMSNorms per layer,
sliding and full layers (``layer_types``), and after ``num_dense_layers`` dense layers a MoE of
routed experts with a learned expert bias and ``num_shared_experts`` shared experts."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("afmoe")
def read_afmoe(c: ConfigFields) -> Architecture:
    """``AfmoeAttention``: q/k/v/o (``attention_bias``) plus gate_proj hidden → heads·head_dim;
    ``AfmoeMoE``: router (bias-free) and ``expert_bias`` (one per expert, a parameter),
    shared MLP of ``moe_intermediate_size`` × ``num_shared_experts``."""
    arch = read_llama_like(c)
    moe_inter = c.positive("moe_intermediate_size")
    shared = c.integer("num_shared_experts", default=0)
    first_moe = c.integer("num_dense_layers", default=1)
    return arch.model_copy(
        update={
            "qk_norm": "per_head",
            "attention_output_gate": True,
            "pre_norms_per_layer": 2,
            "post_norms_per_layer": 2,
            "num_experts": c.positive("num_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": moe_inter,
            "num_shared_experts": shared,
            "shared_expert_intermediate_size": moe_inter * shared,
            "router_bias": True,
            "moe_layers": tuple(range(first_moe, arch.num_layers)),
        }
    )

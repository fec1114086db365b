"""Tencent Hunyuan (``modeling_hunyuan_v1_dense.py``, ``modeling_hunyuan_v1_moe.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("hunyuan_v1_dense")
def read_hunyuan_dense(c: ConfigFields) -> Architecture:
    """Llama's layout with per-head RMSNorm on queries and keys (query/key_layernorm)."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"qk_norm": "per_head"})


@register("hunyuan_v1_moe")
def read_hunyuan_moe(c: ConfigFields) -> Architecture:
    """Every MLP: a shared MLP plus ``num_experts`` routed experts, all of ``intermediate_size``."""
    arch = read_hunyuan_dense(c)
    experts = c.raw.get("num_experts", 1)
    if not isinstance(experts, int) or isinstance(experts, bool):
        raise ConfigError(
            "Per-layer expert counts ('num_experts' as a list) are not supported.", "num_experts"
        )
    top_k = c.raw.get("moe_topk", 1)
    if not isinstance(top_k, int) or isinstance(top_k, bool):
        raise ConfigError("Per-layer 'moe_topk' lists are not supported.", "moe_topk")
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": top_k,
            "moe_intermediate_size": arch.intermediate_size,
            "num_shared_experts": 1,
            "shared_expert_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )

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
    top_k = _uniform_top_k(c.raw.get("moe_topk", 1))
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


def _uniform_top_k(value: object) -> int:
    """``moe_topk`` as one number: released configs (Hunyuan-A13B) write it per layer as a list,
    which transformers indexes by layer (``HunYuanMoEV1Gate``); a list of equal entries is that
    number, a list of different ones has no single value to report."""
    if isinstance(value, list) and value and len({repr(v) for v in value}) == 1:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(
            "'moe_topk' must be a positive integer or a list of equal ones.", "moe_topk"
        )
    return value

"""MiniMax-M2 (``modeling_minimax_m2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("minimax_m2")
def read_minimax_m2(c: ConfigFields) -> Architecture:
    """Full attention with RMSNorm over all of q and k, every MLP a routed MoE (no shared expert)."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "qk_norm": "full" if c.flag("use_qk_norm", True) else "none",
            "num_experts": c.positive("num_local_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )

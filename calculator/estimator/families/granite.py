"""IBM Granite (``modeling_granite.py``), Granite MoE (``modeling_granitemoe.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("granite")
def read_granite(c: ConfigFields) -> Architecture:
    """Llama's layout; the embedding/residual/attention/logit multipliers hold no parameters."""
    return read_llama_like(c)


@register("granitemoe")
def read_granitemoe(c: ConfigFields) -> Architecture:
    """Every MLP is ``num_local_experts`` experts of ``intermediate_size`` behind a bias-free router."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "num_experts": c.positive("num_local_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
            "mlp_bias": False,
        }
    )

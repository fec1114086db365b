"""IBM Granite (``modeling_granite.py``), Granite MoE (``modeling_granitemoe.py``) and Granite MoE
with a shared expert (``modeling_granitemoeshared.py``)."""

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


@register("granitemoeshared")
def read_granitemoeshared(c: ConfigFields) -> Architecture:
    """Granite MoE plus, when ``shared_intermediate_size`` > 0, a shared gated MLP in every layer
    (``GraniteMoeSharedMLP``: input_linear hidden → 2 × shared, output_linear back)."""
    arch = read_granitemoe(c)
    shared = c.integer("shared_intermediate_size", default=0)
    return arch.model_copy(
        update={
            "num_shared_experts": 1 if shared else 0,
            "shared_expert_intermediate_size": shared,
            "qkv_bias": c.flag("attention_bias", False),
            "o_bias": c.flag("attention_bias", False),
        }
    )

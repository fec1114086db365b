"""Mistral (``modeling_mistral.py``) and Mixtral (``modeling_mixtral.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("mistral")
def read_mistral(c: ConfigFields) -> Architecture:
    """Llama-shaped; every layer uses the sliding window when the config sets one."""
    return read_llama_like(c)


@register("mixtral")
def read_mixtral(c: ConfigFields) -> Architecture:
    """Mistral's attention with every MLP replaced by ``num_local_experts`` routed experts."""
    arch = read_llama_like(c)
    experts = c.positive("num_local_experts")
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )

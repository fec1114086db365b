"""Mistral (``modeling_mistral.py``), Mixtral (``modeling_mixtral.py``) and the Ministral 3
language model (``modeling_ministral3.py``)."""

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


@register("ministral3")
def read_ministral3(c: ConfigFields) -> Architecture:
    """Ministral 3's language model (the ``text_config`` of its Mistral 3 checkpoints): Mistral's
    layer with bias-free projections; a sliding window on every layer when the config sets one."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"qkv_bias": False, "o_bias": False, "mlp_bias": False})


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

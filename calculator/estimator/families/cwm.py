"""Meta Code World Model (``modeling_cwm.py``): Llama's layer with bias-free attention and
interleaved sliding-window / full-attention layers (``layer_types``)."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("cwm")
def read_cwm(c: ConfigFields) -> Architecture:
    """q/k/v/o carry no bias whatever the config says (``CwmAttention``); the MLP follows
    ``mlp_bias``; only the sliding layers' cache is capped at ``sliding_window``."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"qkv_bias": False, "o_bias": False})

"""Phi-3 / Phi-3.5 / Phi-4 (``modeling_phi3.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("phi3")
def read_phi3(c: ConfigFields) -> Architecture:
    """Llama-shaped with fused qkv and gate/up projections (same parameter count), no biases."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"qkv_bias": False, "o_bias": False})

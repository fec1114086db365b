"""EXAONE 4.0 (``modeling_exaone4.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("exaone4")
def read_exaone4(c: ConfigFields) -> Architecture:
    """Norms after attention and MLP (as OLMo 2), per-head q/k RMSNorm, hybrid sliding window."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "qk_norm": "per_head",
            "qkv_bias": False,
            "o_bias": False,
            "pre_norms_per_layer": 0,
            "post_norms_per_layer": 2,
        }
    )

"""ByteDance Seed-OSS (``modeling_seed_oss.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("seed_oss")
def read_seed_oss(c: ConfigFields) -> Architecture:
    """Llama's layout; q/k/v biases (``attention_bias``) apart from o_proj's (``attention_out_bias``)."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "qkv_bias": c.flag("attention_bias", True),
            "o_bias": c.flag("attention_out_bias", False),
        }
    )

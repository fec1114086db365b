"""OLMo 2 (``modeling_olmo2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("olmo2")
def read_olmo2(c: ConfigFields) -> Architecture:
    """Norms after attention and MLP (not before), RMSNorm over all of q and k."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={"qk_norm": "full", "pre_norms_per_layer": 0, "post_norms_per_layer": 2}
    )


@register("olmo3")
def read_olmo3(c: ConfigFields) -> Architecture:
    """OLMo 2's layout with sliding-window layers (``modeling_olmo3.py``)."""
    return read_olmo2(c)

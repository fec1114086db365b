"""SmolLM3 (``modeling_smollm3.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    layer_types_from,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("smollm3")
def read_smollm3(c: ConfigFields) -> Architecture:
    """Llama's layout; some layers skip RoPE (no parameters), optional sliding window."""
    arch = read_llama_like(c)
    layer_types, window = layer_types_from(c, arch.num_layers)
    if not c.flag("use_sliding_window", False):
        layer_types, window = (), None
    return arch.model_copy(update={"layer_types": layer_types, "sliding_window": window})

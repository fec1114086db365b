"""Kyutai Helium (``modeling_helium.py``): Llama's layer; ``attention_bias`` applies to q/k/v
only, o_proj has none."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigError, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("helium")
def read_helium(c: ConfigFields) -> Architecture:
    """``HeliumAttention`` maps hidden_size → hidden_size in o_proj, so the attention width must
    equal hidden_size (true of the released Helium configs)."""
    arch = read_llama_like(c)
    if arch.q_width != arch.hidden_size:
        raise ConfigError(
            "Helium needs num_attention_heads × head_dim equal to hidden_size.", "head_dim"
        )
    return arch.model_copy(update={"o_bias": False})

"""Arcee AFM (``modeling_arcee.py``), Swiss AI Apertus (``modeling_apertus.py``) and Microsoft
BitNet b1.58 (``modeling_bitnet.py``): Llama's attention with a different MLP."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("arcee")
def read_arcee(c: ConfigFields) -> Architecture:
    """A non-gated up/down MLP (ReLU², ``ArceeMLP``) with ``mlp_bias``."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"mlp_gated": False, "hidden_act": c.text("hidden_act", "relu2")})


@register("apertus")
def read_apertus(c: ConfigFields) -> Architecture:
    """A non-gated, bias-free up/down MLP whose xIELU activation learns two scalars (alpha_p,
    alpha_n) per layer; per-head q/k RMSNorms; ``attention_bias`` on q/k/v/o."""
    arch = read_llama_like(c)
    xielu = c.text("hidden_act", "xielu") == "xielu"
    return arch.model_copy(
        update={
            "mlp_gated": False,
            "mlp_bias": False,
            "qk_norm": "per_head",
            "hidden_act": c.text("hidden_act", "xielu"),
            "other_params": arch.num_layers * 2 if xielu else 0,
        }
    )


@register("bitnet")
def read_bitnet(c: ConfigFields) -> Architecture:
    """Llama's layer plus an RMSNorm on the attention output (``attn_sub_norm``, hidden_size) and
    one inside the MLP (``ffn_sub_norm``, intermediate_size); bias-free MLP."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "mlp_bias": False,
            "hidden_act": c.text("hidden_act", "relu2"),
            "other_params": arch.num_layers * (arch.hidden_size + arch.intermediate_size),
        }
    )

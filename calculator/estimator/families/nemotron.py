"""Nemotron-4 / Minitron (``modeling_nemotron.py``, ``configuration_nemotron.py``, transformers
5.24)."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("nemotron")
def read_nemotron(c: ConfigFields) -> Architecture:
    """Llama's attention (biases on q/k/v/o when ``attention_bias``), a non-gated MLP
    (up_proj, squared-ReLU, down_proj; biases when ``mlp_bias``) and ``NemotronLayerNorm1P``
    norms, LayerNorms with weight and bias (two per layer and the final one)."""
    arch = read_llama_like(c)
    bias = c.flag("attention_bias", False)
    return arch.model_copy(
        update={
            "qkv_bias": bias,
            "o_bias": bias,
            "mlp_gated": False,
            "mlp_bias": c.flag("mlp_bias", False),
            "norm_kind": "layer",
        }
    )

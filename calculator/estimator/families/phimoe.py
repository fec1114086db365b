"""Phi-3.5-MoE (``modeling_phimoe.py``, ``configuration_phimoe.py``, transformers 5.24)."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("phimoe")
def read_phimoe(c: ConfigFields) -> Architecture:
    """Mixtral's layer with LayerNorms (weight and bias, ``PhimoeDecoderLayer`` and the final
    ``norm``), ``attention_bias`` on q/k/v *and* o (``PhimoeAttention``), a bias-free router
    (``PhimoeTopKRouter``), ``num_local_experts`` routed experts in every layer, and a
    ``lm_head`` bias when ``lm_head_bias`` is set (``PhimoeForCausalLM``)."""
    arch = read_llama_like(c)
    bias = c.flag("attention_bias", False)
    return arch.model_copy(
        update={
            "norm_kind": "layer",
            "qkv_bias": bias,
            "o_bias": bias,
            "lm_head_bias": c.flag("lm_head_bias", False),
            "num_experts": c.positive("num_local_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )

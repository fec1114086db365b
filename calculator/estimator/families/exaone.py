"""EXAONE 3.0 / 3.5 (``configuration_exaone.py``), EXAONE 4.0 (``modeling_exaone4.py``) and EXAONE
MoE (``modeling_exaone_moe.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("exaone")
def read_exaone(c: ConfigFields) -> Architecture:
    """EXAONE 3.x: ``ExaoneConfig`` is Llama's config under EXAONE's names (``num_layers``,
    ``activation_function``, ``layer_norm_epsilon``) and transformers builds it as
    ``LlamaForCausalLM``; the Llama reader already accepts ``num_layers``."""
    raw = dict(c.raw)
    if "hidden_act" not in raw and "activation_function" in raw:
        raw["hidden_act"] = raw["activation_function"]
    return read_llama_like(ConfigFields(raw))


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


@register("exaone_moe")
def read_exaone_moe(c: ConfigFields) -> Architecture:
    """EXAONE MoE: pre-norms, per-head q/k RMSNorm, sliding layers every ``sliding_window_pattern``
    (``layer_types``); MoE layers from ``mlp_layer_types`` (else after ``first_k_dense_replace``)
    with ``num_shared_experts`` × ``moe_intermediate_size`` of shared expert."""
    arch = read_llama_like(c)
    layers = arch.num_layers
    types = c.raw.get("mlp_layer_types")
    if isinstance(types, list) and len(types) == layers:
        moe = tuple(i for i, kind in enumerate(types) if kind == "sparse")
    else:
        first_dense = c.integer("first_k_dense_replace", default=1)
        moe = tuple(range(first_dense, layers))
    moe_inter = c.positive("moe_intermediate_size")
    shared = c.integer("num_shared_experts", default=1)
    return arch.model_copy(
        update={
            "qk_norm": "per_head",
            "qkv_bias": False,
            "o_bias": False,
            "num_experts": c.positive("num_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": moe_inter,
            "num_shared_experts": shared,
            "shared_expert_intermediate_size": moe_inter * shared,
            "moe_layers": moe,
        }
    )

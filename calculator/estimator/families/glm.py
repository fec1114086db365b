"""Zhipu GLM-4 0414 (``modeling_glm4.py``), GLM-4 9B chat (``modeling_glm.py``) and GLM-4.5 / 4.6
(``modeling_glm4_moe.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("glm4")
def read_glm4(c: ConfigFields) -> Architecture:
    """Four RMSNorms per layer (before and after attention and MLP), biases on q/k/v only."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "qkv_bias": c.flag("attention_bias", True),
            "o_bias": False,
            "pre_norms_per_layer": 2,
            "post_norms_per_layer": 2,
        }
    )


@register("glm")
def read_glm(c: ConfigFields) -> Architecture:
    """GLM-4 9B / GLM-Edge (``modeling_glm.py``): Llama's two RMSNorms per layer, biases on q/k/v
    (``attention_bias``, default true) but not on o, a fused bias-free gate_up MLP (the same
    parameters as separate gate and up), and ``head_dim`` 128 unless the config says otherwise
    (``GlmConfig``'s default, not hidden / heads)."""
    if not c.has("head_dim"):
        c = ConfigFields({**c.raw, "head_dim": 128})
    arch = read_llama_like(c)
    return arch.model_copy(update={"qkv_bias": c.flag("attention_bias", True), "o_bias": False})


@register("glm4_moe")
def read_glm4_moe(c: ConfigFields) -> Architecture:
    """GQA with q/k/v biases and optional per-head q/k norms; after ``first_k_dense_replace``
    dense layers, routed experts plus ``n_shared_experts`` shared ones. The MTP layer
    (``num_nextn_predict_layers``) is not built by transformers and not counted."""
    if not c.has("head_dim"):
        # modeling_glm4_moe: head_dim defaults to hidden_size // num_attention_heads (floored).
        hidden = c.positive("hidden_size")
        c = ConfigFields({**c.raw, "head_dim": hidden // c.positive("num_attention_heads")})
    arch = read_llama_like(c)
    experts = c.positive("n_routed_experts")
    moe_inter = c.positive("moe_intermediate_size")
    shared = c.integer("n_shared_experts", default=1)
    first_dense = c.integer("first_k_dense_replace", default=1)
    return arch.model_copy(
        update={
            "qkv_bias": c.flag("attention_bias", False),
            "o_bias": False,
            "qk_norm": "per_head" if c.flag("use_qk_norm", False) else "none",
            "num_experts": experts,
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": moe_inter,
            "num_shared_experts": shared,
            "shared_expert_intermediate_size": moe_inter * shared,
            "moe_layers": tuple(range(first_dense, arch.num_layers)),
        }
    )

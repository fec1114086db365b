"""rednote dots.llm1 (``modeling_dots1.py``): Qwen 3's attention (per-head q/k RMSNorms) with
DeepSeek V3's MoE: dense layers before ``first_k_dense_replace``, then routed experts plus
``n_shared_experts`` × ``moe_intermediate_size`` of shared expert behind a bias-free router (the
score-correction bias is a buffer, not a parameter)."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("dots1")
def read_dots1(c: ConfigFields) -> Architecture:
    """Sliding-window layers follow ``layer_types`` when the config lists them."""
    arch = read_llama_like(c)
    moe_inter = c.positive("moe_intermediate_size")
    shared = c.integer("n_shared_experts", default=0)
    first_dense = c.integer("first_k_dense_replace", default=0)
    return arch.model_copy(
        update={
            "qk_norm": "per_head",
            "qkv_bias": c.flag("attention_bias", False),
            "o_bias": c.flag("attention_bias", False),
            "num_experts": c.positive("n_routed_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": moe_inter,
            "num_shared_experts": shared,
            "shared_expert_intermediate_size": moe_inter * shared,
            "moe_layers": tuple(range(first_dense, arch.num_layers)),
        }
    )

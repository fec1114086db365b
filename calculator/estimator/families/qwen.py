"""Qwen2 / Qwen2.5 (``modeling_qwen2.py``), Qwen3 (``modeling_qwen3.py``) and their MoE variants."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("qwen2")
def read_qwen2(c: ConfigFields) -> Architecture:
    """Llama-shaped with biases on q/k/v (not on o_proj)."""
    return read_llama_like(c)


@register("qwen3")
def read_qwen3(c: ConfigFields) -> Architecture:
    """Qwen3: per-head RMSNorm on queries and keys, no q/k/v bias by default."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "qk_norm": "per_head",
            "qkv_bias": c.flag("attention_bias", False),
            "o_bias": c.flag("attention_bias", False),
        }
    )


@register("qwen2_moe", "qwen3_moe")
def read_qwen_moe(c: ConfigFields) -> Architecture:
    """Qwen1.5/2 MoE (shared expert with a sigmoid gate) and Qwen3 MoE (no shared expert)."""
    arch = read_qwen3(c) if c.text("model_type", "") == "qwen3_moe" else read_llama_like(c)
    experts = c.positive("num_experts", "num_local_experts")
    step = c.positive("decoder_sparse_step", default=1)
    dense_only = set(c.integers("mlp_only_layers"))
    moe_layers = tuple(
        i for i in range(arch.num_layers) if i not in dense_only and (i + 1) % step == 0
    )
    shared = c.integer("shared_expert_intermediate_size", default=0)
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": c.positive("moe_intermediate_size"),
            "shared_expert_intermediate_size": shared,
            "num_shared_experts": 1 if shared else 0,
            "shared_expert_gate": bool(shared),
            "moe_layers": moe_layers,
        }
    )

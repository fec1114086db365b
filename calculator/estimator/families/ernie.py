"""Baidu ERNIE 4.5 (``modeling_ernie4_5.py``, ``modeling_ernie4_5_moe.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("ernie4_5")
def read_ernie4_5(c: ConfigFields) -> Architecture:
    """Llama's layout; ``use_bias`` puts biases on every attention and MLP projection."""
    arch = read_llama_like(c)
    bias = c.flag("use_bias", False)
    return arch.model_copy(
        update={
            "qkv_bias": bias,
            "o_bias": bias,
            "mlp_bias": bias,
            "tie_word_embeddings": c.flag("tie_word_embeddings", True),
        }
    )


@register("ernie4_5_moe")
def read_ernie4_5_moe(c: ConfigFields) -> Architecture:
    """MoE layers from ``moe_layer_start_index`` to ``moe_layer_end_index`` every
    ``moe_layer_interval``; shared experts; the router keeps an expert-score correction bias."""
    arch = read_ernie4_5(c)
    experts = c.positive("moe_num_experts")
    start = c.integer("moe_layer_start_index", default=1)
    # Ernie4_5_MoeConfig: the default -1 means the last layer.
    if c.raw.get("moe_layer_end_index") in (None, -1):
        end = arch.num_layers - 1
    else:
        end = c.integer("moe_layer_end_index")
    interval = c.positive("moe_layer_interval", default=1)
    shared = c.integer("moe_num_shared_experts", default=0)
    moe_inter = c.positive("moe_intermediate_size")
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": c.positive("moe_k"),
            "moe_intermediate_size": moe_inter,
            "num_shared_experts": shared,
            "shared_expert_intermediate_size": moe_inter * shared,
            "router_bias": True,
            "expert_bias": c.flag("use_bias", False),
            "moe_layers": tuple(
                i for i in range(arch.num_layers) if (i + 1) % interval == 0 and start <= i <= end
            ),
        }
    )

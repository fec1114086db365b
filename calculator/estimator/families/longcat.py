"""Meituan LongCat-Flash (``modeling_longcat_flash.py``, ``configuration_longcat_flash.py``):
each of ``num_layers`` decoder layers holds two sublayers (multi-head latent attention, a dense
SwiGLU MLP of ``ffn_hidden_size``, two RMSNorms each) and one shortcut-connected MoE whose router
also chooses among ``zero_expert_num`` identity ("zero") experts."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.deepseek import read_deepseek
from calculator.estimator.families.registry import register


@register("longcat_flash")
def read_longcat_flash(c: ConfigFields) -> Architecture:
    """Read as 2 × ``num_layers`` attention sublayers (each with its own KV cache); the MoE
    (``LongcatFlashMoE``) sits on every other sublayer with that sublayer's dense MLP as its
    always-on shared part. The router scores routed + zero experts, and transformers allocates
    gate/up rows for the zero experts too (``LongcatFlashExperts.gate_up_proj``), so those rows
    and router rows are counted in ``other_params``."""
    if c.has("num_layers"):
        sublayers = 2 * c.positive("num_layers")
    else:
        sublayers = c.positive("num_hidden_layers")
    ffn = c.positive("ffn_hidden_size", "intermediate_size")
    base = ConfigFields(
        {**c.raw, "num_hidden_layers": sublayers, "intermediate_size": ffn, "n_routed_experts": 0}
    )
    arch = read_deepseek(base)
    experts = c.positive("n_routed_experts", "num_local_experts")
    zero = c.integer("zero_expert_num", default=0)
    expert_ffn = c.positive("expert_ffn_hidden_size", "moe_intermediate_size")
    h = arch.hidden_size
    moe_blocks = sublayers // 2
    router_bias = c.flag("router_bias", False)
    extra = moe_blocks * zero * (h + 2 * expert_ffn * h + (1 if router_bias else 0))
    return arch.model_copy(
        update={
            "model_type": "longcat_flash",
            "num_experts": experts,
            "experts_per_token": c.positive("moe_topk", "num_experts_per_tok"),
            "moe_intermediate_size": expert_ffn,
            "num_shared_experts": 1,
            "shared_expert_intermediate_size": ffn,
            "router_bias": router_bias,
            "moe_layers": tuple(range(0, sublayers, 2)),
            "other_params": extra,
        }
    )

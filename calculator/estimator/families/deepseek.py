"""DeepSeek V2 / V3 / R1 (``modeling_deepseek_v2.py``, ``modeling_deepseek_v3.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


@register("deepseek_v2", "deepseek_v3")
def read_deepseek(c: ConfigFields) -> Architecture:
    """Multi-head latent attention and MoE with shared experts after dense-first layers."""
    fields = core_fields(c)
    heads = fields["num_attention_heads"]
    rope = c.positive("qk_rope_head_dim")
    nope = c.positive("qk_nope_head_dim")
    v_dim = c.positive("v_head_dim")
    q_rank = c.raw.get("q_lora_rank")
    fields.update(
        attention_kind="mla",
        num_kv_heads=heads,
        head_dim=rope + nope,
        v_head_dim=v_dim,
        q_lora_rank=c.integer("q_lora_rank") if q_rank else None,
        kv_lora_rank=c.positive("kv_lora_rank"),
        qk_rope_head_dim=rope,
        qkv_bias=False,
        o_bias=c.flag("attention_bias", False),
        intermediate_size=c.positive("intermediate_size"),
    )
    experts = c.integer("n_routed_experts", default=0)
    if experts:
        first_dense = c.integer("first_k_dense_replace", default=0)
        freq = c.positive("moe_layer_freq", default=1)
        shared = c.integer("n_shared_experts", default=0)
        moe_inter = c.positive("moe_intermediate_size")
        fields.update(
            num_experts=experts,
            experts_per_token=c.positive("num_experts_per_tok"),
            moe_intermediate_size=moe_inter,
            num_shared_experts=shared,
            shared_expert_intermediate_size=moe_inter * shared,
            moe_layers=tuple(
                i for i in range(fields["num_layers"]) if i >= first_dense and i % freq == 0
            ),
        )
    return Architecture(**fields)

"""JetMoE (``modeling_jetmoe.py``, ``configuration_jetmoe.py``, transformers 5.24): a mixture of
attention heads (MoA) and a mixture of MLP experts in every layer."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, ConfigFields, core_fields
from calculator.estimator.families.registry import register


@register("jetmoe")
def read_jetmoe(c: ConfigFields) -> Architecture:
    """``JetMoeAttention``: one shared bias-free kv_proj (keys and values of
    ``num_key_value_heads`` × ``kv_channels``) and a MoA of ``num_local_experts`` query/output
    projection pairs (hidden ↔ kv width) behind a bias-free router, plus one output bias; each
    token runs ``num_experts_per_tok`` of them, so it has heads × top-k query heads
    (``JetMoeConfig`` derives ``num_attention_heads`` so). ``JetMoeMoE``: ``num_local_experts``
    gated experts of ``intermediate_size`` (input_linear hidden → 2 × intermediate), a bias-free
    router and one output bias. Two RMSNorms per layer; tied embeddings by default."""
    kv_heads = c.positive("num_key_value_heads", default=16)
    head = c.positive("kv_channels", "head_dim", default=128)
    top_k = c.positive("num_experts_per_tok", default=2)
    experts = c.positive("num_local_experts", default=8)
    raw = {
        **c.raw,
        "num_attention_heads": kv_heads * top_k,
        "num_key_value_heads": kv_heads,
        "head_dim": head,
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
    }
    if "hidden_act" not in raw and "activation_function" in raw:
        raw["hidden_act"] = raw["activation_function"]
    fields = ConfigFields(raw)
    core = core_fields(fields, head_dim_from_hidden=False)
    hidden = core["hidden_size"]
    kv = kv_heads * head
    attention = 2 * hidden * kv + experts * 2 * hidden * kv + hidden + hidden * experts
    return Architecture(
        **core,
        intermediate_size=fields.positive("intermediate_size"),
        attention_block_params=attention,
        num_experts=experts,
        experts_per_token=top_k,
        moe_intermediate_size=fields.positive("intermediate_size"),
        moe_layers=tuple(range(core["num_layers"])),
        other_params=core["num_layers"] * hidden,  # JetMoeMoE's output bias
    )

"""DeepSeek V2 / V3 / R1 (``modeling_deepseek_v2.py``, ``modeling_deepseek_v3.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
)
from calculator.estimator.families.registry import register


def moe_layers_from(c: ConfigFields, num_layers: int, first_dense_default: int) -> tuple[int, ...]:
    """MoE layers from ``mlp_layer_types`` ("sparse") when the config lists them, else every layer
    from ``first_k_dense_replace`` on (every ``moe_layer_freq``-th)."""
    types = c.raw.get("mlp_layer_types")
    if isinstance(types, list) and len(types) == num_layers:
        return tuple(i for i, kind in enumerate(types) if kind == "sparse")
    first_dense = c.integer("first_k_dense_replace", default=first_dense_default)
    freq = c.positive("moe_layer_freq", default=1)
    return tuple(i for i in range(num_layers) if i >= first_dense and i % freq == 0)


@register("deepseek_v2", "deepseek_v3", "glm4_moe_lite")
def read_deepseek(c: ConfigFields) -> Architecture:
    """Multi-head latent attention and MoE with shared experts after dense-first layers.

    GLM-4.7-Flash (``glm4_moe_lite``) is built from the same modules (``modeling_glm4_moe_lite``)
    with one dense layer first."""
    fields = core_fields(c, head_dim_from_hidden=False)
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
        shared = c.integer("n_shared_experts", default=0)
        moe_inter = c.positive("moe_intermediate_size")
        fields.update(
            num_experts=experts,
            experts_per_token=c.positive("num_experts_per_tok"),
            moe_intermediate_size=moe_inter,
            num_shared_experts=shared,
            shared_expert_intermediate_size=moe_inter * shared,
            moe_layers=moe_layers_from(
                c, fields["num_layers"], 1 if fields["model_type"] == "glm4_moe_lite" else 0
            ),
        )
    return Architecture(**fields)


def _indexer_layers(c: ConfigFields, num_layers: int) -> tuple[int, ...]:
    """How many layers run their own indexer. GLM-5 (``configuration_glm_moe_dsa.py``) lists
    ``indexer_types`` ("full" or "shared": reuse the previous full layer's top-k, no indexer
    weights), else derives them from ``index_topk_pattern`` or ``index_topk_freq`` /
    ``index_skip_topk_offset``; DeepSeek-V3.2 runs one in every layer."""
    if c.text("model_type", "") != "glm_moe_dsa":
        return tuple(range(num_layers))
    types = c.raw.get("indexer_types")
    if isinstance(types, list) and len(types) == num_layers:
        return tuple(i for i, kind in enumerate(types) if kind == "full")
    pattern = c.raw.get("index_topk_pattern")
    if isinstance(pattern, str) and len(pattern) == num_layers:
        return tuple(i for i, kind in enumerate(pattern) if kind == "F")
    if isinstance(pattern, list) and len(pattern) == num_layers:
        return tuple(i for i, kind in enumerate(pattern) if kind == "full")
    freq = max(c.integer("index_topk_freq", default=1), 1)
    offset = c.integer("index_skip_topk_offset", default=2)
    return tuple(i for i in range(num_layers) if max(i - offset + 1, 0) % freq == 0)


@register("deepseek_v32", "glm_moe_dsa")
def read_deepseek_sparse(c: ConfigFields) -> Architecture:
    """DeepSeek-V3.2 and GLM-5 (``modeling_deepseek_v32``, ``modeling_glm_moe_dsa``): DeepSeek V3
    plus a lightning indexer per layer for DeepSeek Sparse Attention (wq_b from the query latent,
    wk, a LayerNorm on its keys, and per-head weights)."""
    arch = read_deepseek(c)
    indexed = _indexer_layers(c, arch.num_layers)
    heads = c.positive("index_n_heads")
    dim = c.positive("index_head_dim")
    q_rank = arch.q_lora_rank or arch.hidden_size
    indexer = q_rank * heads * dim + arch.hidden_size * dim + 2 * dim + arch.hidden_size * heads
    return arch.model_copy(
        update={
            "moe_layers": moe_layers_from(c, arch.num_layers, 3),
            "other_params": len(indexed) * indexer,
            "indexer_layers": indexed,
            "indexer_head_dim": dim,
        }
    )

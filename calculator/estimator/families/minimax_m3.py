"""MiniMax-M3 (``modeling_minimax_m3_vl.py``, ``configuration_minimax_m3_vl.py``, transformers
5.24.0): a text model of GQA layers with per-head q/k RMSNorms, a lightning indexer beside the
attention of the ``minimax_m3_sparse`` layers, dense SwiGLU MLPs on the ``dense`` entries of
``mlp_layer_types`` and elsewhere a MoE (sigmoid router, routed experts of ``intermediate_size``,
one shared expert of ``shared_intermediate_size``); a CLIP-like vision tower with a Conv3d patch
embedding and a projector that merges spatial_merge_size² patches into one token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    VisionTower,
    core_fields,
)
from calculator.estimator.families.registry import register
from calculator.estimator.families.vision import qwen_image_tokens


def _per_layer(
    c: ConfigFields, name: str, legacy: list[Any] | None, on: str, off: str
) -> list[str]:
    """MiniMaxM3VLTextConfig.__post_init__: ``layer_types`` / ``mlp_layer_types`` as given, else
    from the legacy 0/1 list (``sparse_attention_config.sparse_attention_freq``,
    ``moe_layer_freq``), else every layer ``full_attention`` / ``sparse``."""
    given = c.raw.get(name)
    if isinstance(given, list):
        return [str(kind) for kind in given]
    if isinstance(legacy, list):
        return [on if flag else off for flag in legacy]
    return []


def _vision_params(v: ConfigFields, text_hidden: int, projector: int) -> int:
    """``MiniMaxM3VLVisionModel``: bias-free Conv3d (channels × temporal × patch² → hidden),
    pre-LayerNorm, CLIP encoder layers (biased q/k/v/out and fc1/fc2, two LayerNorms);
    ``MiniMaxM3VLMultiModalProjector``: linear_1/linear_2 (vision → projector → text) and
    merge_linear_1/merge_linear_2 (text × merge² → projector → text), all biased."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    layers = v.positive("num_hidden_layers")
    patch = v.positive("patch_size")
    temporal = v.positive("temporal_patch_size")
    channels = v.positive("num_channels")
    merge = v.positive("spatial_merge_size")
    embed = channels * temporal * patch * patch * hidden + 2 * hidden
    block = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    merged = text_hidden * merge * merge
    projection = hidden * projector + projector + projector * text_hidden + text_hidden
    projection += merged * projector + projector + projector * text_hidden + text_hidden
    return embed + layers * block + projection


@register("minimax_m3_vl")
def read_minimax_m3_vl(c: ConfigFields) -> Architecture:
    """The whole checkpoint as ``MiniMaxM3SparseForConditionalGeneration`` builds it; the
    text model's omitted fields take MiniMaxM3VLTextConfig's defaults (``class_defaults``)."""
    text_raw, vision_raw = c.section("text_config"), c.section("vision_config")
    t = ConfigFields({**text_raw, "model_type": "minimax_m3_vl_text"})
    fields = core_fields(t)
    layers, hidden = fields["num_layers"], fields["hidden_size"]
    sparse_config = t.raw.get("sparse_attention_config")
    sparse_config = sparse_config if isinstance(sparse_config, Mapping) else {}
    attention_types = _per_layer(
        t,
        "layer_types",
        sparse_config.get("sparse_attention_freq"),
        "minimax_m3_sparse",
        "full_attention",
    )
    mlp_types = _per_layer(t, "mlp_layer_types", t.raw.get("moe_layer_freq"), "sparse", "dense")
    attention_types = attention_types or ["full_attention"] * layers
    mlp_types = mlp_types or ["sparse"] * layers
    if len(attention_types) != layers or len(mlp_types) != layers:
        raise ConfigError(
            "layer_types and mlp_layer_types must list every layer.", "mlp_layer_types"
        )
    # MiniMaxM3VLIndexer on each sparse layer: q_proj hidden → heads × dim, k_proj hidden →
    # dim, q_norm and k_norm of dim (the legacy sparse_* names, as __post_init__ maps them).
    index_heads = int(sparse_config.get("sparse_num_index_heads") or t.positive("index_n_heads"))
    index_dim = int(sparse_config.get("sparse_index_dim") or t.positive("index_head_dim"))
    indexer = hidden * index_heads * index_dim + hidden * index_dim + 2 * index_dim
    sparse_layers = sum(1 for kind in attention_types if kind == "minimax_m3_sparse")
    shared = t.integer("shared_intermediate_size", default=0)
    vision = ConfigFields({**vision_raw, "model_type": "minimax_m3_vl_vision"})
    extra = _vision_params(vision, hidden, c.positive("projector_hidden_size"))
    fields.update(
        model_type="minimax_m3_vl",
        # __post_init__ sets hidden_act to "silu" whatever the file says ("swigluoai").
        hidden_act="silu",
        intermediate_size=t.positive("dense_intermediate_size"),
        qk_norm="per_head",
        num_experts=t.positive("num_local_experts"),
        experts_per_token=t.positive("num_experts_per_tok"),
        moe_intermediate_size=t.positive("intermediate_size"),
        num_shared_experts=1 if shared else 0,
        shared_expert_intermediate_size=shared,
        moe_layers=tuple(i for i, kind in enumerate(mlp_types) if kind == "sparse"),
        # MiniMaxM3VLConfig: the root's tie flag, or the text config's when that one ties.
        tie_word_embeddings=c.flag("tie_word_embeddings", False)
        or t.flag("tie_word_embeddings", False),
        other_params=sparse_layers * indexer,
        extra_params=extra,
        vision=VisionTower(
            tokens_per_image=qwen_image_tokens(
                vision.positive("patch_size"), vision.positive("spatial_merge_size")
            ),
            source="modeling_minimax_m3_vl.py (Qwen2.5-VL patch embedding, merge²); "
            "image_processing_qwen2_vl.py smart_resize",
        ),
    )
    return Architecture(**fields)

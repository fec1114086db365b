"""Vision towers of the vision-language families: their parameters (counted as
``Architecture.extra_params``) and the tokens one image adds to the language model's sequence.

Image tokens follow each model's own patch/merge arithmetic for a reference image of
``REFERENCE_IMAGE_SIDE`` × ``REFERENCE_IMAGE_SIDE`` pixels (Qwen's processors resize each side to
a multiple of patch × merge, ``smart_resize`` in ``image_processing_qwen2_vl.py``).
"""

from __future__ import annotations

from calculator.estimator.architecture import ConfigFields, VisionTower

REFERENCE_IMAGE_SIDE = 1024


def qwen_image_tokens(patch: int, merge: int) -> int:
    """Tokens for the reference image: (side / patch)² patches, merged merge × merge into one."""
    unit = patch * merge
    side = max(unit, round(REFERENCE_IMAGE_SIDE / unit) * unit)
    return (side // patch) ** 2 // (merge * merge)


def qwen_vision_tower(v: ConfigFields, *, deepstack: bool) -> tuple[int, VisionTower]:
    """Qwen3-VL / Qwen3.5 vision encoder (``modeling_qwen3_vl.py``): a biased Conv3d patch
    embedding, learned positions, pre-LayerNorm ViT blocks with biased qkv/proj/fc1/fc2, a
    patch merger (LayerNorm, two biased linears) and, for Qwen3-VL, one more merger per
    ``deepstack_visual_indexes`` entry (LayerNorm over the merged width)."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    depth = v.positive("depth")
    patch = v.positive("patch_size")
    merge = v.positive("spatial_merge_size", default=2)
    temporal = v.positive("temporal_patch_size", default=2)
    channels = v.positive("in_channels", default=3)
    out = v.positive("out_hidden_size")
    positions = v.integer("num_position_embeddings", default=0)
    merged = hidden * merge * merge
    embed = channels * temporal * patch * patch * hidden + hidden + positions * hidden
    block = 4 * hidden + 3 * hidden * hidden + 3 * hidden + hidden * hidden + hidden
    block += 2 * hidden * inter + inter + hidden
    merger = merged * merged + merged + merged * out + out
    params = embed + depth * block + 2 * hidden + merger
    if deepstack:
        params += len(v.integers("deepstack_visual_indexes")) * (2 * merged + merger)
    return params, VisionTower(
        tokens_per_image=qwen_image_tokens(patch, merge),
        source="modeling_qwen3_vl.py patch/merge; image_processing_qwen2_vl.py smart_resize",
    )


def qwen2_vision_tower(v: ConfigFields, text_hidden: int) -> tuple[int, VisionTower]:
    """Qwen2-VL vision encoder (``modeling_qwen2_vl.py``): bias-free Conv3d patches, LayerNorm
    ViT blocks with a quick-GELU MLP of ``mlp_ratio`` × ``embed_dim``, a merger into
    ``hidden_size`` (the language model's width)."""
    embed_dim = v.positive("embed_dim")
    out = v.positive("hidden_size", default=text_hidden)
    ratio = v.positive("mlp_ratio", default=4)
    depth = v.positive("depth")
    patch = v.positive("patch_size")
    merge = v.positive("spatial_merge_size", default=2)
    temporal = v.positive("temporal_patch_size", default=2)
    channels = v.positive("in_channels", default=3)
    inter = ratio * embed_dim
    merged = embed_dim * merge * merge
    embed = channels * temporal * patch * patch * embed_dim
    block = 4 * embed_dim + 3 * embed_dim * embed_dim + 3 * embed_dim
    block += embed_dim * embed_dim + embed_dim + 2 * embed_dim * inter + inter + embed_dim
    merger = 2 * embed_dim + merged * merged + merged + merged * out + out
    return embed + depth * block + merger, VisionTower(
        tokens_per_image=qwen_image_tokens(patch, merge),
        source="modeling_qwen2_vl.py patch/merge; image_processing_qwen2_vl.py smart_resize",
    )


def qwen2_5_vision_tower(v: ConfigFields) -> tuple[int, VisionTower]:
    """Qwen2.5-VL vision encoder (``modeling_qwen2_5_vl.py``): bias-free Conv3d patches, RMSNorm
    ViT blocks with a biased SwiGLU MLP, an RMSNorm + two-linear merger into
    ``out_hidden_size``."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    depth = v.positive("depth")
    patch = v.positive("patch_size")
    merge = v.positive("spatial_merge_size", default=2)
    temporal = v.positive("temporal_patch_size", default=2)
    channels = v.positive("in_channels", default=3)
    out = v.positive("out_hidden_size")
    merged = hidden * merge * merge
    embed = channels * temporal * patch * patch * hidden
    block = 2 * hidden + 3 * hidden * hidden + 3 * hidden + hidden * hidden + hidden
    block += 3 * hidden * inter + 2 * inter + hidden
    merger = hidden + merged * merged + merged + merged * out + out
    return embed + depth * block + merger, VisionTower(
        tokens_per_image=qwen_image_tokens(patch, merge),
        source="modeling_qwen2_5_vl.py patch/merge; image_processing_qwen2_vl.py smart_resize",
    )

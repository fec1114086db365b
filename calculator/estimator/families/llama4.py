"""Llama 4 Scout / Maverick (``modeling_llama4.py``): a MoE language model (``llama4_text``)
and, in the multimodal checkpoint (``llama4``), a ViT with a pixel-shuffle adapter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from calculator.estimator.architecture import Architecture, ConfigFields, VisionTower
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("llama4_text")
def read_llama4_text(c: ConfigFields) -> Architecture:
    """MoE layers (``moe_layers``, else every ``interleave_moe_layer_step``-th) with one shared
    expert and a top-k router without bias; dense layers use ``intermediate_size_mlp``. The
    q/k norm is a parameter-free L2 norm. Chunked-attention layers (the RoPE layers, three in
    four) keep only the last ``attention_chunk_size`` tokens: transformers' DynamicCache gives
    them a ``DynamicSlidingWindowLayer`` of that size (``cache_utils.get_layer_types_and_kwargs``)."""
    arch = read_llama_like(c)
    layers = arch.num_layers
    listed = c.raw.get("moe_layers")
    if isinstance(listed, list):
        moe = tuple(i for i in listed if isinstance(i, int) and 0 <= i < layers)
    else:
        step = c.positive("interleave_moe_layer_step", default=1)
        moe = tuple(range(step - 1, layers, step))
    expert = c.positive("intermediate_size")
    chunk = c.integer("attention_chunk_size", default=0)
    types = c.raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        chunked = [str(kind) == "chunked_attention" for kind in types]
    else:
        no_rope = c.raw.get("no_rope_layers")
        if not (isinstance(no_rope, list) and len(no_rope) == layers):
            interval = c.positive("no_rope_layer_interval", default=4)
            no_rope = [int((i + 1) % interval != 0) for i in range(layers)]
        chunked = [bool(flag) for flag in no_rope]
    layer_types: tuple[Literal["full", "sliding"], ...] = ()
    if chunk and any(chunked):
        layer_types = tuple("sliding" if flag else "full" for flag in chunked)
    return arch.model_copy(
        update={
            "intermediate_size": c.positive("intermediate_size_mlp", default=expert),
            "qkv_bias": c.flag("attention_bias", False),
            "o_bias": c.flag("attention_bias", False),
            "num_experts": c.positive("num_local_experts"),
            "experts_per_token": c.positive("num_experts_per_tok", default=1),
            "moe_intermediate_size": expert,
            "num_shared_experts": 1,
            "shared_expert_intermediate_size": expert,
            "moe_layers": moe,
            "layer_types": layer_types,
            "sliding_window": chunk if layer_types else None,
        }
    )


# Llama4VisionConfig's defaults (transformers 5.24 configuration_llama4.py): the tower a
# Llama4ForConditionalGeneration gets when its config has no vision_config.
LLAMA4_VISION_DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 34,
    "num_channels": 3,
    "intermediate_size": 5632,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "pixel_shuffle_ratio": 0.5,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
}


def llama4_vision(v: ConfigFields, text_hidden: int) -> tuple[int, VisionTower]:
    """Llama 4's ViT: a bias-free patch linear, class token and learned positions, pre/post
    LayerNorms, LayerNorm blocks with biased attention and MLP, the pixel-shuffle adapter
    (two bias-free linears) and the bias-free projector into the language model."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    layers = v.positive("num_hidden_layers")
    patch = v.positive("patch_size")
    image = v.positive("image_size")
    channels = v.positive("num_channels", default=3)
    patches = (image // patch) ** 2
    embed = channels * patch * patch * hidden + hidden + (patches + 1) * hidden + 4 * hidden
    block = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    adapter = inter * v.positive("projector_input_dim") + v.positive("projector_output_dim") ** 2
    projector = v.positive("vision_output_dim") * text_hidden
    ratio = v.number("pixel_shuffle_ratio", default=0.5)
    tokens_per_tile = int(patches * ratio * ratio)
    # Llama4ImageProcessor splits an image into tiles of image_size (up to max_patches) and
    # adds one global view: a 1024-pixel square is 3 × 3 tiles of 448 plus the global one.
    per_side = -(-1024 // image)  # ceil(1024 / image_size)
    tiles = per_side * per_side + 1
    return embed + layers * block + adapter + projector, VisionTower(
        tokens_per_image=tiles * tokens_per_tile,
        source="modeling_llama4.py (pixel shuffle); image_processing_llama4 tiling",
    )


@register("llama4")
def read_llama4(c: ConfigFields) -> Architecture:
    """The multimodal checkpoint: ``text_config`` plus ``vision_config``."""
    text = c.raw.get("text_config")
    text_fields = ConfigFields(dict(text) if isinstance(text, Mapping) else c.raw)
    arch = read_llama4_text(text_fields)
    vision = c.raw.get("vision_config")
    if not isinstance(vision, Mapping):
        # transformers builds the default vision tower when the config names none.
        vision = {}
    extra, tower = llama4_vision(
        ConfigFields({**LLAMA4_VISION_DEFAULTS, **vision}), arch.hidden_size
    )
    # The language model's own text_config flag ties its LM head, not the root's.
    return arch.model_copy(update={"model_type": "llama4", "extra_params": extra, "vision": tower})

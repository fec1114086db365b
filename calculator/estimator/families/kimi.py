"""Kimi K2.5 / K2.6 (``modeling_kimi_k25.py``, ``configuration_kimi_k25.py``): the Kimi K2 /
DeepSeek V3 language model (``text_config``) plus the MoonViT vision tower and its patch-merging
projector."""

from __future__ import annotations

from collections.abc import Mapping

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    VisionTower,
)
from calculator.estimator.families.deepseek import read_deepseek
from calculator.estimator.families.registry import register
from calculator.estimator.families.vision import qwen_image_tokens


def moonvit_vision(v: ConfigFields, c: ConfigFields, text_hidden: int) -> tuple[int, VisionTower]:
    """MoonViT (``Kimi_K25VisionModel``): a biased patch conv, a learned height × width position
    table, LayerNorm blocks with biased q/k/v/proj and a biased fc1/fc2 MLP, a final LayerNorm;
    the projector (``Kimi_K25MultimodalProjection``): a LayerNorm over ``projection_hidden_size``,
    then two biased linears on merge_h × merge_w merged patches. Transformers reads
    ``hidden_size`` / ``intermediate_size`` / ``num_hidden_layers`` (defaults 1152 / 4304 / 27);
    the published configs name the same values ``vt_*``, used when the plain names are absent."""
    hidden = v.positive("hidden_size", "vt_hidden_size", default=1152)
    inter = v.positive("intermediate_size", "vt_intermediate_size", default=4304)
    layers = v.positive("num_hidden_layers", "vt_num_hidden_layers", default=27)
    patch = v.positive("patch_size", default=14)
    height = v.positive("pos_emb_height", default=64)
    width = v.positive("pos_emb_width", default=64)
    kernel = v.raw.get("merge_kernel_size") or [2, 2]
    if not (
        isinstance(kernel, list | tuple)
        and len(kernel) == 2
        and all(isinstance(k, int) and k > 0 for k in kernel)
    ):
        raise ConfigError("merge_kernel_size must be two positive integers.", "merge_kernel_size")
    merge_area = int(kernel[0]) * int(kernel[1])
    projection = c.positive("projection_hidden_size", default=1152)
    embed = 3 * patch * patch * hidden + hidden + height * width * hidden
    block = 4 * hidden + 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden
    merged = projection * merge_area
    projector = 2 * projection + merged * merged + merged + merged * text_hidden + text_hidden
    return embed + layers * block + 2 * hidden + projector, VisionTower(
        tokens_per_image=qwen_image_tokens(patch, int(kernel[0])),
        source="modeling_kimi_k25.py: patch_size patches merged merge_kernel_size into one token",
    )


@register("kimi_k25")
def read_kimi_k25(c: ConfigFields) -> Architecture:
    """The DeepSeek V3 text model from ``text_config`` (its ``kimi_k2`` model_type is rewritten to
    ``deepseek_v3`` by ``Kimi_K25Config``) plus MoonViT; the LM head follows the root's
    ``tie_word_embeddings``."""
    text = c.raw.get("text_config")
    if not isinstance(text, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    arch = read_deepseek(ConfigFields({**text, "model_type": "deepseek_v3"}))
    update: dict[str, object] = {
        "model_type": "kimi_k25",
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
    }
    vision = c.raw.get("vision_config")
    if isinstance(vision, Mapping):
        extra, tower = moonvit_vision(ConfigFields(vision), c, arch.hidden_size)
        update.update(extra_params=extra, vision=tower)
    return arch.model_copy(update=update)

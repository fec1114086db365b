"""Mistral Small 3.1 / 3.2, Magistral, Devstral checkpoints with vision (``modeling_mistral3.py``):
a Mistral language model plus the Pixtral vision encoder (``modeling_pixtral.py``)."""

from __future__ import annotations

from collections.abc import Mapping

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    VisionTower,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register
from calculator.estimator.families.vision import REFERENCE_IMAGE_SIDE


def pixtral_vision(v: ConfigFields, c: ConfigFields, text_hidden: int) -> tuple[int, VisionTower]:
    """Pixtral: a bias-free patch conv, RMSNorm pre-norm, RMSNorm blocks with bias-free
    attention and SwiGLU MLP; Mistral 3's projector: RMSNorm, a spatial patch merger
    (merge² × hidden → hidden), two linears into the language model."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    layers = v.positive("num_hidden_layers")
    heads = v.positive("num_attention_heads")
    head_dim = v.positive("head_dim", default=hidden // heads)
    patch = v.positive("patch_size")
    channels = v.positive("num_channels", default=3)
    merge = c.positive("spatial_merge_size", default=2)
    bias = c.flag("multimodal_projector_bias", False)
    feature_layers = c.raw.get("vision_feature_layer", -1)
    feature_count = len(feature_layers) if isinstance(feature_layers, list) else 1
    embed = channels * patch * patch * hidden + hidden
    block = 2 * hidden + 4 * hidden * heads * head_dim + 3 * hidden * inter
    projector = hidden + merge * merge * hidden * hidden
    projector += feature_count * hidden * text_hidden + text_hidden * text_hidden
    projector += 2 * text_hidden if bias else 0
    # Pixtral's processor: one token per merge × merge patches, plus one [IMG_BREAK] /
    # [IMG_END] token per row of merged patches.
    rows = -(-REFERENCE_IMAGE_SIDE // (patch * merge))
    return embed + layers * block + projector, VisionTower(
        tokens_per_image=rows * rows + rows,
        source="modeling_pixtral.py, modeling_mistral3.py patch merger; processing_pixtral rows",
    )


@register("mistral3")
def read_mistral3(c: ConfigFields) -> Architecture:
    """The language model from ``text_config`` (Mistral), the Pixtral tower from
    ``vision_config``."""
    text = c.raw.get("text_config")
    vision = c.raw.get("vision_config")
    if not isinstance(text, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    fields = ConfigFields({**text, "model_type": str(text.get("model_type") or "mistral")})
    arch = (
        Architecture.from_hf_config(fields.raw)
        if fields.raw["model_type"] != "mistral"
        else (read_llama_like(fields))
    )
    update: dict[str, object] = {
        "model_type": "mistral3",
        # The root's flag ties the LM head; Mistral3Config defaults it to true.
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
    }
    if isinstance(vision, Mapping):
        extra, tower = pixtral_vision(ConfigFields(vision), c, arch.hidden_size)
        update.update(extra_params=extra, vision=tower)
    return arch.model_copy(update=update)

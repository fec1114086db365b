"""Llama 3.2 Vision (``modeling_mllama.py``): a Llama language model in which the layers listed
in ``cross_attention_layers`` attend to the image instead of the text, and a tiled ViT."""

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


def mllama_vision(v: ConfigFields, text_hidden: int) -> int:
    """The tiled ViT: bias-free patch conv, class token, gated position embeddings (per tile
    and per aspect ratio), ``num_hidden_layers`` local and ``num_global_layers`` gated global
    LayerNorm blocks (bias-free attention, biased MLP), and the biased projector."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    patch = v.positive("patch_size")
    image = v.positive("image_size")
    channels = v.positive("num_channels", default=3)
    tiles = v.positive("max_num_tiles", default=4)
    ratios = v.raw.get("supported_aspect_ratios")
    ratio_ids = (len(ratios) if isinstance(ratios, list) else 8) + 1
    positions = (image // patch) ** 2 + 1
    embed = channels * patch * patch * hidden + hidden
    embed += 1 + positions * hidden + ratio_ids * tiles * positions * hidden
    embed += 2 * (1 + ratio_ids * tiles * hidden) + 4 * hidden
    block = 4 * hidden * hidden + 2 * hidden * inter + inter + hidden + 4 * hidden
    local = v.positive("num_hidden_layers") * block
    global_ = v.positive("num_global_layers", default=8) * (block + 2)
    projector = v.positive("vision_output_dim") * text_hidden + text_hidden
    return embed + local + global_ + projector


@register("mllama")
def read_mllama(c: ConfigFields) -> Architecture:
    """Cross-attention layers carry q/k norms and two scalar gates instead of self-attention;
    the token embedding has 8 extra rows (the image tokens); the vision tower as above. Each
    image is one ``<|image|>`` token in the text; its tiles' features are attended by the
    cross-attention layers (not modelled as cache)."""
    text = c.raw.get("text_config")
    vision = c.raw.get("vision_config")
    if not isinstance(text, Mapping) or not isinstance(vision, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    arch = read_llama_like(ConfigFields({**text, "model_type": "mllama_text_model"}))
    cross = ConfigFields(text).integers("cross_attention_layers")
    extras = len(cross) * (2 * arch.head_dim + 2) + 8 * arch.hidden_size
    return arch.model_copy(
        update={
            "model_type": "mllama",
            # The embedding has 8 more rows than the LM head: transformers never ties them.
            "tie_word_embeddings": False,
            "other_params": extras,
            "extra_params": mllama_vision(ConfigFields(vision), arch.hidden_size),
            "vision": VisionTower(
                tokens_per_image=1,
                source="modeling_mllama.py: one <|image|> token; tiles go to cross-attention",
            ),
        }
    )

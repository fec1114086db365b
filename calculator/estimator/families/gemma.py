"""Gemma 1/2/3 (``modeling_gemma.py``, ``modeling_gemma2.py``, ``modeling_gemma3.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register


@register("gemma", "gemma2", "gemma3_text")
def read_gemma(c: ConfigFields) -> Architecture:
    """Gemma 1/2/3 (text): tied embeddings, (1 + weight) RMSNorm, explicit head_dim."""
    fields = core_fields(c)
    fields["intermediate_size"] = c.positive("intermediate_size")
    fields["tie_word_embeddings"] = c.flag("tie_word_embeddings", True)
    fields["hidden_act"] = c.text("hidden_activation", c.text("hidden_act", "gelu_pytorch_tanh"))
    fields["norm_kind"] = "rms_gemma"
    fields["qkv_bias"] = c.flag("attention_bias", False)
    fields["o_bias"] = c.flag("attention_bias", False)
    model_type = fields["model_type"]
    if model_type in {"gemma2", "gemma3_text", "gemma3"}:
        fields["post_norms_per_layer"] = 2
        fields["final_logit_softcapping"] = c.raw.get("final_logit_softcapping")
        layer_types, window = layer_types_from(c, fields["num_layers"])
        if not layer_types and c.has("sliding_window"):
            pattern = c.integer(
                "sliding_window_pattern", default=2 if model_type == "gemma2" else 6
            )
            # Gemma 2 alternates sliding (even layers) and global; Gemma 3 puts one global layer
            # after every pattern-1 sliding ones (modeling_gemma2/3 layer_types defaults).
            if model_type == "gemma2":
                layer_types = tuple(
                    "sliding" if not i % 2 else "full" for i in range(fields["num_layers"])
                )
            else:
                layer_types = tuple(
                    "full" if (i + 1) % pattern == 0 else "sliding"
                    for i in range(fields["num_layers"])
                )
            window = c.integer("sliding_window")
        fields["layer_types"] = layer_types
        fields["sliding_window"] = window
    if model_type in {"gemma3_text", "gemma3"}:
        fields["qk_norm"] = "per_head"
    return Architecture(**fields)


@register("gemma3", "__multimodal__")
def read_multimodal(c: ConfigFields) -> Architecture:
    """Multimodal configs (Gemma 3 4B+): the language model plus a SigLIP vision tower."""
    config = c.raw
    text_raw = config.get("text_config")
    if not isinstance(text_raw, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    text = dict(text_raw)
    text.setdefault("model_type", f"{config.get('model_type', '')}_text")
    if "vocab_size" not in text and "vocab_size" in config:
        text["vocab_size"] = config["vocab_size"]
    arch = Architecture.from_hf_config(text)
    vision = config.get("vision_config")
    extra = 0
    if isinstance(vision, Mapping):
        extra = siglip_vision_params(ConfigFields(vision), arch.hidden_size, config)
    return arch.model_copy(
        update={"extra_params": extra, "model_type": str(config.get("model_type"))}
    )


def siglip_vision_params(v: ConfigFields, text_hidden: int, config: Mapping[str, Any]) -> int:
    """SigLIP encoder (modeling_siglip) plus Gemma 3's projector (modeling_gemma3)."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    layers = v.positive("num_hidden_layers")
    patch = v.positive("patch_size")
    image = v.positive("image_size")
    channels = v.positive("num_channels", default=3)
    positions = (image // patch) ** 2
    embeddings = channels * patch * patch * hidden + hidden + positions * hidden
    layer = 4 * (hidden * hidden + hidden) + 2 * (hidden * inter) + inter + hidden + 4 * hidden
    post_norm = 2 * hidden
    projector = hidden * text_hidden + hidden  # mm_input_projection_weight + mm_soft_emb_norm
    return embeddings + layers * layer + post_norm + projector

"""Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3-VL-MoE (``modeling_qwen2_vl.py``,
``modeling_qwen2_5_vl.py``, ``modeling_qwen3_vl.py``, ``modeling_qwen3_vl_moe.py``): a Qwen
language model plus the vision tower of ``families/vision.py``."""

from __future__ import annotations

from collections.abc import Mapping

from calculator.estimator.architecture import Architecture, ConfigError, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.qwen import read_qwen3, read_qwen_moe
from calculator.estimator.families.registry import register
from calculator.estimator.families.vision import (
    qwen2_5_vision_tower,
    qwen2_vision_tower,
    qwen_vision_tower,
)


def _text(c: ConfigFields) -> ConfigFields:
    """The language model's fields: ``text_config`` (transformers 4.5x+) or the top level."""
    text = c.raw.get("text_config")
    if isinstance(text, Mapping):
        merged = dict(text)
        for key in ("vocab_size", "tie_word_embeddings"):
            if key not in merged and key in c.raw:
                merged[key] = c.raw[key]
        return ConfigFields(merged)
    return c


def _vision(c: ConfigFields) -> ConfigFields:
    vision = c.raw.get("vision_config")
    if not isinstance(vision, Mapping):
        raise ConfigError("Config is missing the object 'vision_config'.", "vision_config")
    return ConfigFields(vision)


@register("qwen2_vl", "qwen2_5_vl")
def read_qwen2_vl(c: ConfigFields) -> Architecture:
    """Qwen2-shaped language model (q/k/v biases) with the Qwen2(.5)-VL vision tower."""
    text = _text(c)
    model_type = c.text("model_type", "qwen2_vl")
    arch = read_llama_like(ConfigFields({**text.raw, "model_type": "qwen2"}))
    if model_type == "qwen2_vl":
        extra, tower = qwen2_vision_tower(_vision(c), arch.hidden_size)
    else:
        extra, tower = qwen2_5_vision_tower(_vision(c))
    # Qwen2(.5)-VL configs forward a text_config tie_word_embeddings=true to the root.
    tie = c.flag("tie_word_embeddings", False) or arch.tie_word_embeddings
    return arch.model_copy(
        update={
            "model_type": model_type,
            "tie_word_embeddings": tie,
            "extra_params": extra,
            "vision": tower,
        }
    )


@register("qwen3_vl", "qwen3_vl_moe")
def read_qwen3_vl(c: ConfigFields) -> Architecture:
    """Qwen3 (or Qwen3-MoE) language model with the DeepStack vision tower of Qwen3-VL."""
    text = _text(c)
    model_type = c.text("model_type", "qwen3_vl")
    if model_type == "qwen3_vl_moe":
        arch = read_qwen_moe(ConfigFields({**text.raw, "model_type": "qwen3_moe"}))
    else:
        arch = read_qwen3(ConfigFields({**text.raw, "model_type": "qwen3"}))
    extra, tower = qwen_vision_tower(_vision(c), deepstack=True)
    return arch.model_copy(
        update={
            "model_type": model_type,
            # Only the root's flag ties the LM head (Qwen3VLConfig default: false).
            "tie_word_embeddings": c.flag("tie_word_embeddings", False),
            "extra_params": extra,
            "vision": tower,
        }
    )

"""Gemma 1/2/3 (``modeling_gemma.py``, ``modeling_gemma2.py``, ``modeling_gemma3.py``), Gemma 3n
(``modeling_gemma3n.py``) and VaultGemma (``modeling_vaultgemma.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    VisionTower,
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


@register("vaultgemma")
def read_vaultgemma(c: ConfigFields) -> Architecture:
    """VaultGemma: Gemma 2's attention (biases on q/k/v/o with ``attention_bias``, sliding and
    full layers from ``layer_types``) with only two RMSNorms per layer (``input_layernorm``,
    ``pre_feedforward_layernorm``), tied embeddings."""
    arch = read_gemma(c)
    layer_types, window = layer_types_from(c, arch.num_layers)
    return arch.model_copy(update={"layer_types": layer_types, "sliding_window": window})


# Gemma3TextConfig's defaults (transformers 5.24 configuration_gemma3.py) for the fields that
# shape the parameter count and the cache.
GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131_072,
    "sliding_window": 4096,
    "tie_word_embeddings": True,
    "attention_bias": False,
}


@register("gemma3")
def read_multimodal(c: ConfigFields) -> Architecture:
    """Multimodal configs (Gemma 3 4B+): the language model plus a SigLIP vision tower."""
    config = c.raw
    text_raw = config.get("text_config")
    if not isinstance(text_raw, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    # Published Gemma 3 configs list only what differs from Gemma3TextConfig's defaults
    # (gemma-3-4b-it gives hidden size, layers and sliding window), so the defaults fill in.
    defaults = GEMMA3_TEXT_DEFAULTS if config.get("model_type") == "gemma3" else {}
    text = {**defaults, **dict(text_raw)}
    text.setdefault("model_type", f"{config.get('model_type', '')}_text")
    if "vocab_size" not in text and "vocab_size" in config:
        text["vocab_size"] = config["vocab_size"]
    arch = Architecture.from_hf_config(text)
    vision = config.get("vision_config")
    extra = 0
    if isinstance(vision, Mapping):
        extra = siglip_vision_params(ConfigFields(vision), arch.hidden_size, config)
    tokens = c.integer("mm_tokens_per_image", default=256)
    tower = VisionTower(
        tokens_per_image=tokens,
        source="modeling_gemma3.py: every image is pooled to mm_tokens_per_image soft tokens",
    )
    return arch.model_copy(
        update={
            "extra_params": extra,
            "model_type": str(config.get("model_type")),
            "vision": tower if isinstance(vision, Mapping) else None,
        }
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
    head = 0
    if v.flag("vision_use_head", True):
        # SiglipMultiheadAttentionPoolingHead: probe, nn.MultiheadAttention, LayerNorm, MLP.
        head = hidden + 4 * hidden * hidden + 4 * hidden + 2 * hidden
        head += 2 * hidden * inter + inter + hidden
    return embeddings + layers * layer + post_norm + head + projector


@register("gemma3n_text")
def read_gemma3n_text(c: ConfigFields) -> Architecture:
    """Gemma 3n's language model (``modeling_gemma3n.py``): Gemma 3's layer plus, per layer,
    AltUp (``altup_num_inputs`` streams: router, prediction and correction coefficients),
    LAuReL (a rank-``laurel_rank`` residual) and a per-layer-input gate; model-wide, the
    per-layer embeddings (``vocab_size_per_layer_input`` × layers × ``hidden_size_per_layer_input``)
    with their projection, and the AltUp in/out projections. The last ``num_kv_shared_layers``
    layers reuse earlier layers' keys and values, so they keep no KV cache of their own."""
    sizes = c.raw.get("intermediate_size")
    layers = c.positive("num_hidden_layers")
    if isinstance(sizes, list):
        if len(sizes) != layers or not all(isinstance(s, int) and s > 0 for s in sizes):
            raise ConfigError(
                "intermediate_size must list one positive width per layer.", "intermediate_size"
            )
        per_layer_sizes = [int(s) for s in sizes]
    else:
        per_layer_sizes = [c.positive("intermediate_size")] * layers
    base = ConfigFields(
        {**c.raw, "intermediate_size": per_layer_sizes[0], "model_type": "gemma3_text"}
    )
    arch = read_gemma(base)
    h = arch.hidden_size
    streams = c.positive("altup_num_inputs", default=4)
    rank = c.positive("laurel_rank", default=64)
    per_layer = c.positive("hidden_size_per_layer_input", default=256)
    per_layer_vocab = c.positive("vocab_size_per_layer_input", default=arch.vocab_size)
    altup = h + streams * streams + streams**3 + streams * h + h
    laurel = 2 * h * rank + h
    gate = 2 * h * per_layer + h
    mlp_delta = sum(3 * h * (size - per_layer_sizes[0]) for size in per_layer_sizes)
    model_level = (
        per_layer_vocab * layers * per_layer
        + layers * per_layer * h
        + per_layer
        + 2 * (streams - 1) * h * h
    )
    return arch.model_copy(
        update={
            "model_type": "gemma3n_text",
            "other_params": layers * (altup + laurel + gate) + mlp_delta + model_level,
            "kv_shared_layers": c.integer("num_kv_shared_layers", default=0),
            "per_layer_embedding": (per_layer_vocab, layers * per_layer),
            "unquantized_params": layers * (2 * h * rank + streams * h)
            + layers * per_layer * h
            + 2 * (streams - 1) * h * h,
        }
    )


@register("gemma3n")
def read_gemma3n(c: ConfigFields) -> Architecture:
    """Gemma 3n's full checkpoint: the language model above; its MobileNetV5 vision tower (built
    through timm) and its audio encoder are not modelled, so the result says so."""
    text = c.raw.get("text_config")
    if not isinstance(text, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    arch = read_gemma3n_text(ConfigFields({**text, "model_type": "gemma3n_text"}))
    return arch.model_copy(
        update={
            "model_type": "gemma3n",
            "approximate_reason": (
                "Gemma 3n's language model is counted exactly (per-layer embeddings included); "
                "its vision (MobileNetV5) and audio encoders are not counted."
            ),
        }
    )

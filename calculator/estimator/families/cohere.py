"""Command R (``modeling_cohere.py``) and Command R7B / Command A (``modeling_cohere2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register


@register("cohere", "cohere2")
def read_cohere(c: ConfigFields) -> Architecture:
    """Parallel attention and MLP behind one bias-free LayerNorm; tied embeddings.

    Cohere's LayerNorm has a weight and no bias, so it counts like an RMSNorm; ``use_qk_norm``
    adds such a norm over every query and key head. Cohere 2 interleaves sliding-window layers.
    """
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    bias = c.flag("attention_bias", False)
    layer_types, window = layer_types_from(c, fields["num_layers"])
    if not layer_types and fields["model_type"] == "cohere2" and c.has("sliding_window"):
        pattern = c.positive("sliding_window_pattern", default=4)
        layer_types = tuple(
            "full" if (i + 1) % pattern == 0 else "sliding" for i in range(fields["num_layers"])
        )
        window = c.integer("sliding_window")
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        qkv_bias=bias,
        o_bias=bias,
        qk_norm="full" if c.flag("use_qk_norm", False) else "none",
        pre_norms_per_layer=1,
        parallel_block=True,
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        layer_types=layer_types,
        sliding_window=window,
    )
    return Architecture(**fields)

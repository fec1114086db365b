"""Muse Glimmer (``modeling_muse_glimmer.py``, ``configuration_muse_glimmer.py``, transformers
5.24.0): a text model whose attention has a sigmoid output gate (``gate_proj`` hidden → heads ·
head_dim) and a scale-free q/k RMSNorm, four centred RMSNorms per layer, sliding and full layers,
a final logit soft-cap; a ViT vision tower with a linear patch embedding and a learned position
table, whose output (spatial merge², ``out_hidden_size``) goes through a two-layer adapter and a
projection onto the text width, all bias-free."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    VisionTower,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register
from calculator.estimator.families.vision import qwen_image_tokens


def _vision_params(v: ConfigFields) -> int:
    """``MuseGlimmerVisionModel``: patch_embedding (patch_temporal · 3 · patch² → hidden, no
    bias), position_embedding_table (pos_emb_height · pos_emb_width rows), ln_pre and ln_post
    (LayerNorms), and per layer two LayerNorms, biased q/k/v/proj and biased fc1/fc2."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    patch = v.positive("patch_size")
    embed = v.positive("patch_temporal") * 3 * patch * patch * hidden
    embed += v.positive("pos_emb_height") * v.positive("pos_emb_width") * hidden
    block = 4 * hidden + 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden
    return embed + 4 * hidden + v.positive("num_hidden_layers") * block


@register("muse_glimmer")
def read_muse_glimmer(c: ConfigFields) -> Architecture:
    """The whole checkpoint as ``MuseGlimmerForConditionalGeneration`` builds it; omitted fields
    of the text and vision configs take MuseGlimmerTextConfig's / MuseGlimmerVisionConfig's
    defaults (``class_defaults``)."""
    text_raw, vision_raw = c.section("text_config"), c.section("vision_config")
    t = ConfigFields({**text_raw, "model_type": "muse_glimmer_text"})
    fields = core_fields(t)
    layers, hidden = fields["num_layers"], fields["hidden_size"]
    layer_types, window = layer_types_from(t, layers)
    if not layer_types:
        # MuseGlimmerTextConfig.__post_init__: full attention on every 4th layer from the last.
        layer_types = tuple(
            "full" if (layers - 1 - i) % 4 == 0 else "sliding" for i in range(layers)
        )
        window = t.integer("sliding_window", default=0) or None
        if window is None:
            layer_types = ("full",) * layers
    bias = t.flag("attention_bias", False)
    v = ConfigFields({**vision_raw, "model_type": "muse_glimmer_vision"})
    projector = c.positive("projector_hidden_size")
    adapter = c.positive("out_hidden_size") * projector + projector * projector
    fields.update(
        model_type="muse_glimmer",
        hidden_act=t.text("hidden_activation", "silu"),
        intermediate_size=t.positive("intermediate_size"),
        qkv_bias=bias,
        o_bias=bias,
        attention_output_gate=True,
        pre_norms_per_layer=2,
        post_norms_per_layer=2,
        layer_types=layer_types,
        sliding_window=window,
        final_logit_softcapping=t.number("final_logit_softcapping") or None,
        # The root's flag ties lm_head to the embedding (MuseGlimmerConfig declares none, so an
        # absent one is untied); the text config's own flag does not (transformers 5.24 builds
        # an untied head for text_config.tie_word_embeddings = true alone).
        tie_word_embeddings=c.flag("tie_word_embeddings", False),
        extra_params=_vision_params(v) + adapter + projector * hidden,
        vision=VisionTower(
            tokens_per_image=qwen_image_tokens(v.positive("patch_size"), v.positive("merge_size")),
            source="modeling_muse_glimmer.py (patch_size, merge_size² pixel shuffle); "
            "image_processing_qwen2_vl.py smart_resize",
        ),
    )
    return Architecture(**fields)

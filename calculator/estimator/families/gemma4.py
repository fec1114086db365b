"""Gemma 4 (``modeling_gemma4.py``, ``configuration_gemma4.py``): Gemma 3's layer with
per-layer attention shapes (full-attention layers use ``global_head_dim`` and, with
``attention_k_eq_v``, ``num_global_key_value_heads`` and no v_proj: values are the keys), an
optional MoE block beside the dense MLP (``enable_moe_block``), optional per-layer inputs
(``hidden_size_per_layer_input``) and KV sharing for the last ``num_kv_shared_layers`` layers;
the multimodal checkpoint adds the Gemma 4 vision encoder and its projection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    VisionTower,
    core_fields,
)
from calculator.estimator.families.registry import register


def _layer_types(c: ConfigFields, layers: int) -> list[Literal["full", "sliding"]]:
    """``layer_types``, else Gemma4TextConfig's default (five sliding, one full); the last layer
    is always full attention."""
    raw = c.raw.get("layer_types")
    types: list[Literal["full", "sliding"]]
    if isinstance(raw, list) and len(raw) == layers:
        types = ["sliding" if "sliding" in str(kind) else "full" for kind in raw]
    else:
        types = ["sliding" if (i + 1) % 6 else "full" for i in range(layers)]
    types[-1] = "full"
    return types


def _kv_reuse(types: list[Literal["full", "sliding"]], shared: int) -> list[bool]:
    """Which layers reuse an earlier layer's keys and values (``kv_sharing_modes`` "reuse")."""
    layers = len(types)
    return [i >= layers - shared for i in range(layers)]


def _attention_shapes(
    c: ConfigFields, types: list[Literal["full", "sliding"]], head_dim: int, kv_heads: int
) -> list[tuple[int, int]]:
    """(head size, KV heads) per layer: ``per_layer_config`` overrides when the config lists
    them, else Gemma4TextConfig's derivation (full layers: ``global_head_dim`` and, with
    ``attention_k_eq_v``, ``num_global_key_value_heads``)."""
    overrides: dict[int, Mapping[str, object]] = {}
    raw = c.raw.get("per_layer_config")
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            if not (str(key).isdigit() and isinstance(value, Mapping)):
                raise ConfigError(
                    "per_layer_config must map layer indices to fields.", "per_layer_config"
                )
            overrides[int(str(key))] = value
    else:
        full: dict[str, object] = {"head_dim": c.positive("global_head_dim", default=512)}
        if c.flag("attention_k_eq_v", False) and c.has("num_global_key_value_heads"):
            full["num_key_value_heads"] = c.positive("num_global_key_value_heads")
        overrides = {i: full for i, kind in enumerate(types) if kind == "full"}
    shapes = []
    for i in range(len(types)):
        layer = ConfigFields(dict(overrides.get(i, {})))
        shapes.append(
            (
                layer.positive("head_dim", default=head_dim),
                layer.positive("num_key_value_heads", default=kv_heads),
            )
        )
    return shapes


def _kv_layer_shapes(
    shapes: list[tuple[int, int]], head_dim: int, kv_heads: int
) -> tuple[tuple[int, int, int], ...]:
    """(KV heads, key size, value size) per layer, or none when every layer has the sliding
    shape; keys and values have one head size (``Gemma4TextAttention``; llama.cpp's gemma4
    loader requires ``n_embd_head_k == n_embd_head_v``)."""
    if all(shape == (head_dim, kv_heads) for shape in shapes):
        return ()
    return tuple((kv, dim, dim) for dim, kv in shapes)


def _attention_extra(
    types: list[Literal["full", "sliding"]],
    shapes: list[tuple[int, int]],
    reuse: list[bool],
    *,
    h: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    bias: bool,
    k_eq_v: bool,
) -> int:
    """What the layers' own attention shapes add to (or take from) the sliding shape that the
    Architecture counts in every layer (``Gemma4TextAttention``: q/o projections and q_norm;
    k/v projections and k_norm unless the layer reuses another's keys and values; no v_proj
    when ``attention_k_eq_v`` on full layers)."""

    def attention(dim: int, kv: int, *, own_kv: bool, values: bool) -> int:
        q = heads * dim
        params = 2 * h * q + dim + (q + h if bias else 0)  # q_proj, o_proj, q_norm
        if own_kv:
            projections = 2 if values else 1
            params += projections * (h * kv * dim + (kv * dim if bias else 0)) + dim  # k_norm
        return params

    sliding = attention(head_dim, kv_heads, own_kv=True, values=True)
    # What Architecture.shared_kv_saving already takes off a reusing layer of the sliding shape.
    sliding_saving = 2 * (h * kv_heads * head_dim + (kv_heads * head_dim if bias else 0)) + head_dim
    extra = 0
    for kind, reused, (dim, kv) in zip(types, reuse, shapes, strict=True):
        values = not (k_eq_v and kind == "full")
        layer = attention(dim, kv, own_kv=not reused, values=values)
        extra += layer - (sliding - sliding_saving if reused else sliding)
    return extra


def _moe_block(
    c: ConfigFields, *, h: int, layers: int, inter: int
) -> tuple[int, dict[str, object]]:
    """``enable_moe_block``: the router's and the experts' scales and three more norms per
    layer (``Gemma4TextRouter``, ``Gemma4TextDecoderLayer``), and the MoE fields."""
    if not c.flag("enable_moe_block", False):
        return 0, {}
    experts = c.positive("num_experts")
    # Router scale and per-expert scale; post_feedforward_layernorm_1/_2 and
    # pre_feedforward_layernorm_2.
    extra = layers * (h + experts + 3 * h)
    return extra, {
        "num_experts": experts,
        "experts_per_token": c.positive("top_k_experts"),
        "moe_intermediate_size": c.positive("moe_intermediate_size"),
        # The dense MLP runs beside the routed experts in every layer, as a shared expert.
        "num_shared_experts": 1,
        "shared_expert_intermediate_size": inter,
        "moe_layers": tuple(range(layers)),
    }


def _per_layer_inputs(c: ConfigFields, *, h: int, layers: int) -> tuple[int, dict[str, Any]]:
    """``hidden_size_per_layer_input`` (``Gemma4TextModel``, ``Gemma4TextDecoderLayer``): the
    parameters and the Architecture fields that say where they lie."""
    per_layer = c.integer("hidden_size_per_layer_input", default=256)
    if not per_layer:
        return 0, {}
    per_layer_vocab = c.positive("vocab_size_per_layer_input", default=262_144)
    # Per layer: input gate, projection, post norm; model: the per-layer embedding table,
    # its projection from the hidden state and its norm.
    extra = layers * (2 * h * per_layer + h)
    model_projection = h * layers * per_layer
    params = extra + per_layer_vocab * layers * per_layer + model_projection + per_layer
    return params, {
        "per_layer_embedding": (per_layer_vocab, layers * per_layer),
        "unquantized_params": model_projection,
    }


@register("gemma4_text")
def read_gemma4_text(c: ConfigFields) -> Architecture:
    """The Architecture keeps the sliding layers' attention shape; ``other_params`` holds what the
    full-attention layers, the MoE block's router scales and extra norms, the per-layer inputs
    and double-wide MLPs add (``Gemma4TextAttention``, ``Gemma4TextDecoderLayer``,
    ``Gemma4TextRouter``, ``Gemma4TextModel``)."""
    c.require("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    fields = core_fields(c)
    h: int = fields["hidden_size"]
    layers: int = fields["num_layers"]
    kv_heads: int = fields["num_kv_heads"]
    head_dim = c.positive("head_dim", default=256)
    bias = c.flag("attention_bias", False)
    inter = c.positive("intermediate_size")
    types = _layer_types(c, layers)
    shapes = _attention_shapes(c, types, head_dim, kv_heads)
    k_eq_v = c.flag("attention_k_eq_v", False)
    shared = c.integer("num_kv_shared_layers", default=0)
    if shared > layers:
        raise ConfigError("num_kv_shared_layers exceeds num_hidden_layers.", "num_kv_shared_layers")
    reuse = _kv_reuse(types, shared)
    extra = _attention_extra(
        types,
        shapes,
        reuse,
        h=h,
        heads=fields["num_attention_heads"],
        kv_heads=kv_heads,
        head_dim=head_dim,
        bias=bias,
        k_eq_v=k_eq_v,
    )
    if c.flag("use_double_wide_mlp", False):
        extra += sum(reuse) * 3 * h * inter
    moe_extra, update = _moe_block(c, h=h, layers=layers, inter=inter)
    per_layer_params, per_layer_fields = _per_layer_inputs(c, h=h, layers=layers)
    extra += moe_extra + per_layer_params
    if extra < 0:
        raise ConfigError("Gemma 4 attention shapes are inconsistent.", "global_head_dim")
    window = c.positive("sliding_window", default=512)
    fields.update(
        head_dim=head_dim,
        v_head_dim=head_dim,
        intermediate_size=inter,
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        hidden_act=c.text("hidden_activation", "gelu_pytorch_tanh"),
        norm_kind="rms",
        qk_norm="per_head",
        qkv_bias=bias,
        o_bias=bias,
        post_norms_per_layer=2,
        final_logit_softcapping=c.raw.get("final_logit_softcapping"),
        layer_types=tuple(types),
        sliding_window=window if "sliding" in types else None,
        kv_shared_layers=shared,
        kv_layer_shapes=_kv_layer_shapes(shapes, head_dim, kv_heads),
        other_params=extra,
        **update,
        **per_layer_fields,
    )
    return Architecture(**fields)


def gemma4_vision(v: ConfigFields, text_hidden: int, tokens: int) -> tuple[int, VisionTower]:
    """Gemma 4's vision encoder (``Gemma4VisionModel``): a bias-free patch projection, a 2 ×
    ``position_embedding_size`` position table, blocks of bias-free q/k/v/o with q/k norms,
    four RMSNorms and a gated MLP; ``Gemma4MultimodalEmbedder``'s bias-free projection into the
    language model (its pre-norm has no weight). Clipped linears add buffers, not parameters."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    layers = v.positive("num_hidden_layers")
    heads = v.positive("num_attention_heads")
    kv_heads = v.positive("num_key_value_heads", default=heads)
    head_dim = v.positive("head_dim", default=hidden // heads)
    patch = v.positive("patch_size", default=16)
    positions = v.positive("position_embedding_size", default=10240)
    embed = 3 * patch * patch * hidden + 2 * positions * hidden
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 2 * head_dim
    block = attention + 4 * hidden + 3 * hidden * inter
    projector = hidden * text_hidden
    return embed + layers * block + projector, VisionTower(
        tokens_per_image=tokens,
        source="configuration_gemma4.py: vision_soft_tokens_per_image soft tokens per image",
    )


@register("gemma4")
def read_gemma4(c: ConfigFields) -> Architecture:
    """The language model from ``text_config`` plus the vision encoder; an audio encoder
    (``audio_config``, Gemma 4 E2B/E4B) is not counted and the result says so."""
    text = c.raw.get("text_config")
    if not isinstance(text, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    arch = read_gemma4_text(ConfigFields({**text, "model_type": "gemma4_text"}))
    update: dict[str, object] = {
        "model_type": "gemma4",
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
    }
    vision = c.raw.get("vision_config")
    if isinstance(vision, Mapping):
        tokens = c.positive("vision_soft_tokens_per_image", default=280)
        extra, tower = gemma4_vision(ConfigFields(vision), arch.hidden_size, tokens)
        update.update(extra_params=extra, vision=tower)
    if isinstance(c.raw.get("audio_config"), Mapping):
        update["approximate_reason"] = (
            "Gemma 4's language model and vision encoder are counted exactly; its audio encoder "
            "is not counted."
        )
    return arch.model_copy(update=update)

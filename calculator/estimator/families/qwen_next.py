"""Qwen3-Next (``modeling_qwen3_next.py``) and Qwen3.5 (``modeling_qwen3_5.py``,
``modeling_qwen3_5_moe.py``): Gated DeltaNet linear-attention layers interleaved with gated
full-attention layers (one in ``full_attention_interval``)."""

from __future__ import annotations

from collections.abc import Mapping

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    MixerKind,
    RecurrentState,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register
from calculator.estimator.families.vision import qwen_vision_tower


def gated_deltanet(c: ConfigFields, hidden: int) -> RecurrentState:
    """Gated DeltaNet (Yang et al. 2024, arXiv:2412.06464): projections to q, k (key_dim each),
    v and the output gate z (value_dim each), b and a (one per value head); a depthwise conv over
    q, k and v; dt_bias and A_log per value head; a gated RMSNorm of one value head; out_proj.
    The recurrent state is value_heads × key_head_dim × value_head_dim, kept in fp32 by the
    torch path (``torch_chunk_gated_delta_rule``)."""
    key_heads = c.positive("linear_num_key_heads")
    value_heads = c.positive("linear_num_value_heads")
    key_dim = key_heads * c.positive("linear_key_head_dim")
    value_head_dim = c.positive("linear_value_head_dim")
    value_dim = value_heads * value_head_dim
    kernel = c.positive("linear_conv_kernel_dim", default=4)
    conv_dim = 2 * key_dim + value_dim
    params = (
        hidden * (conv_dim + value_dim + 2 * value_heads)
        + conv_dim * kernel
        + 2 * value_heads
        + value_head_dim
        + value_dim * hidden
    )
    return RecurrentState(
        kind="gated_deltanet",
        params=params,
        conv_elements=conv_dim * kernel,
        conv_kernel=kernel,
        state_elements=value_heads * c.positive("linear_key_head_dim") * value_head_dim,
        state_fp32=True,
    )


def _mixers(c: ConfigFields, layers: int) -> tuple[MixerKind, ...]:
    types = c.raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return tuple("attention" if "full" in str(kind) else "gated_deltanet" for kind in types)
    interval = c.positive("full_attention_interval", default=4)
    return tuple(
        "attention" if (i + 1) % interval == 0 else "gated_deltanet" for i in range(layers)
    )


@register("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
def read_qwen3_next(c: ConfigFields) -> Architecture:
    """Hybrid layers; attention with per-head q/k norms and a sigmoid output gate; MoE (routed
    experts, one shared expert with a sigmoid gate) when the config has experts."""
    c.require("hidden_size", "num_hidden_layers", "num_attention_heads", "head_dim")
    if not c.has("intermediate_size"):
        c = ConfigFields({**c.raw, "intermediate_size": c.positive("moe_intermediate_size")})
    arch = read_llama_like(c)
    update: dict[str, object] = {
        "qk_norm": "per_head",
        "qkv_bias": c.flag("attention_bias", False),
        "o_bias": c.flag("attention_bias", False),
        "attention_output_gate": True,
        "mixer_kinds": _mixers(c, arch.num_layers),
        "recurrent": (gated_deltanet(c, arch.hidden_size),),
        "layer_types": (),
        "sliding_window": None,
    }
    experts = c.integer("num_experts", default=0)
    if experts:
        step = c.positive("decoder_sparse_step", default=1)
        dense_only = set(c.integers("mlp_only_layers"))
        shared = c.integer("shared_expert_intermediate_size", default=0)
        update.update(
            num_experts=experts,
            experts_per_token=c.positive("num_experts_per_tok"),
            moe_intermediate_size=c.positive("moe_intermediate_size"),
            shared_expert_intermediate_size=shared,
            num_shared_experts=1 if shared else 0,
            shared_expert_gate=bool(shared),
            moe_layers=tuple(
                i for i in range(arch.num_layers) if i not in dense_only and (i + 1) % step == 0
            ),
        )
    return arch.model_copy(update=update)


@register("qwen3_5", "qwen3_5_moe")
def read_qwen3_5(c: ConfigFields) -> Architecture:
    """Qwen3.5: the text model above plus the Qwen3-VL-style vision tower."""
    text = c.raw.get("text_config")
    if not isinstance(text, Mapping):
        raise ConfigError("Config is missing the object 'text_config'.", "text_config")
    model_type = c.text("model_type", "qwen3_5")
    text_fields = ConfigFields({**text, "model_type": f"{model_type}_text"})
    arch = read_qwen3_next(text_fields)
    tie = c.flag("tie_word_embeddings", False)  # the root's flag (Qwen3_5Config default)
    vision = c.raw.get("vision_config")
    extra, tower = 0, None
    if isinstance(vision, Mapping):
        extra, tower = qwen_vision_tower(ConfigFields(vision), deepstack=False)
    return arch.model_copy(
        update={
            "model_type": model_type,
            "tie_word_embeddings": tie,
            "extra_params": extra,
            "vision": tower,
        }
    )

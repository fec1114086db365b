"""Kimi Linear (``modeling_kimi_linear.py``, ``configuration_kimi_linear.py``, transformers 5.24):
Kimi Delta Attention (KDA) layers interleaved with multi-head latent attention (MLA) layers, and
DeepSeek-V3-style MoE after dense-first layers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    MixerKind,
    RecurrentState,
)
from calculator.estimator.families.deepseek import read_deepseek
from calculator.estimator.families.registry import register


def kimi_delta_attention(c: ConfigFields, hidden: int) -> RecurrentState:
    """``KimiLinearDeltaAttention`` (Kimi Linear report, arXiv:2510.26692 §3): a Gated DeltaNet
    with a per-channel forget gate. q, k and v projections (heads · head_dim each), a bias-free
    depthwise conv over the three, the forget gate (low-rank f_a/f_b, ``dt_bias`` per channel,
    ``A_log`` per head), the beta projection b_proj (one per head), the low-rank output gate
    g_a/g_b, a gated RMSNorm of one head and o_proj. Its state is heads × head_dim × head_dim,
    in fp32 as the torch path keeps it, plus the convolution window."""
    heads = c.positive("linear_num_heads")
    head_dim = c.positive("linear_head_dim")
    kernel = c.positive("linear_conv_kernel_dim")
    qkv = heads * head_dim
    conv_dim = 3 * qkv
    params = (
        3 * hidden * qkv  # q, k, v
        + conv_dim * kernel  # depthwise conv, no bias
        + hidden * head_dim
        + head_dim * qkv
        + qkv
        + heads  # forget gate
        + hidden * heads  # b_proj
        + hidden * head_dim
        + head_dim * qkv  # output gate
        + head_dim  # o_norm
        + qkv * hidden  # o_proj
    )
    return RecurrentState(
        kind="gated_deltanet",
        params=params,
        conv_elements=conv_dim * kernel,
        conv_kernel=kernel,
        state_elements=heads * head_dim * head_dim,
        state_fp32=True,
    )


def _layer_types(raw: Mapping[str, Any], layers: int) -> tuple[MixerKind, ...]:
    """``KimiLinearConfig.__post_init__``: ``layer_types`` when given; else the checkpoint's
    1-based ``full_attn_layers`` / ``kda_layers`` (only when both are listed); else full
    attention on every fourth layer from index 4."""
    types = raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return tuple(
            "attention" if kind == "full_attention" else "gated_deltanet" for kind in types
        )
    linear = raw.get("linear_attn_config")
    if isinstance(linear, Mapping) and "full_attn_layers" in linear and "kda_layers" in linear:
        full = {int(i) - 1 for i in linear["full_attn_layers"]}
        return tuple("attention" if i in full else "gated_deltanet" for i in range(layers))
    return tuple("attention" if i and i % 4 == 0 else "gated_deltanet" for i in range(layers))


@register("kimi_linear")
def read_kimi_linear(c: ConfigFields) -> Architecture:
    """MLA layers (DeepSeek's, q without a low-rank latent unless ``q_lora_rank`` is set) keep a
    KV cache; KDA layers keep a fixed-size state. MoE (``num_experts`` routed, a bias-free
    router whose score-correction bias is a buffer, ``num_shared_experts`` shared) on the
    ``mlp_layer_types`` "sparse" layers, by default every layer after
    ``first_k_dense_replace`` (1)."""
    raw = dict(c.raw)
    linear = raw.get("linear_attn_config")
    if isinstance(linear, Mapping):
        for key, name in (
            ("head_dim", "linear_head_dim"),
            ("num_heads", "linear_num_heads"),
            ("short_conv_kernel_size", "linear_conv_kernel_dim"),
        ):
            if key in linear:
                raw[name] = linear[key]
    raw.setdefault("linear_head_dim", 128)
    raw.setdefault("linear_num_heads", 32)
    raw.setdefault("linear_conv_kernel_dim", 4)
    aliases = {
        "n_routed_experts": ("num_experts", "num_local_experts"),
        "num_experts_per_tok": ("num_experts_per_token",),
        "n_shared_experts": ("num_shared_experts",),
    }
    for name, spellings in aliases.items():
        for spelling in spellings:
            if name not in raw and spelling in raw:
                raw[name] = raw[spelling]
    raw.setdefault("n_routed_experts", 256)
    raw.setdefault("num_experts_per_tok", 8)
    raw.setdefault("n_shared_experts", 1)
    raw.setdefault("first_k_dense_replace", 1)
    fields = ConfigFields(raw)
    arch = read_deepseek(fields)
    return arch.model_copy(
        update={
            "mixer_kinds": _layer_types(raw, arch.num_layers),
            "recurrent": (kimi_delta_attention(fields, arch.hidden_size),),
        }
    )

"""State-space and short-convolution families: Mamba (``modeling_mamba.py``), Mamba-2
(``modeling_mamba2.py``), LFM2 (``modeling_lfm2.py``, ``modeling_lfm2_moe.py``), and the mixers
the hybrids share.

These layers keep no KV cache: transformers' ``LinearAttentionLayer`` (``cache_utils.py``)
holds, per sequence and layer, a convolution state of ``channels × kernel`` elements in the
model dtype and a recurrent state that the torch paths compute in fp32 (``ssm_state`` in
``mamba_inner``/``torch_forward``; the chunked scan of Mamba-2 upcasts to ``float32``).
"""

from __future__ import annotations

from typing import Literal

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    RecurrentState,
    core_fields,
)
from calculator.estimator.families.registry import register


def mamba_mixer(c: ConfigFields, hidden: int, *, prefix: str = "") -> RecurrentState:
    """Mamba (Gu & Dao 2023, arXiv:2312.00752 §3): in_proj h→2I, a depthwise conv over I
    channels, x_proj I→(R + 2N), dt_proj R→I with bias, A_log I×N, D, out_proj I→h."""
    expand = c.positive(f"{prefix}expand", default=2)
    inner = (
        c.positive("intermediate_size", default=expand * hidden) if not prefix else expand * hidden
    )
    state = c.positive(f"{prefix}d_state" if prefix else "state_size", default=16)
    kernel = c.positive(f"{prefix}d_conv" if prefix else "conv_kernel", default=4)
    rank_raw = c.raw.get(f"{prefix}dt_rank" if prefix else "time_step_rank", "auto")
    rank = (
        (hidden + 15) // 16
        if rank_raw in (None, "auto")
        else c.positive(f"{prefix}dt_rank" if prefix else "time_step_rank")
    )
    bias = c.flag(f"{prefix}proj_bias" if prefix else "use_bias", False)
    conv_bias = c.flag(f"{prefix}conv_bias" if prefix else "use_conv_bias", True)
    params = (
        hidden * 2 * inner
        + (2 * inner if bias else 0)
        + inner * kernel
        + (inner if conv_bias else 0)
        + inner * (rank + 2 * state)
        + rank * inner
        + inner
        + inner * state
        + inner
        + inner * hidden
        + (hidden if bias else 0)
    )
    return RecurrentState(
        kind="mamba",
        params=params,
        conv_elements=inner * kernel,
        conv_kernel=kernel,
        state_elements=inner * state,
        state_fp32=True,
        matrices=((hidden, 2 * inner), (inner, rank + 2 * state), (rank, inner), (inner, hidden)),
    )


def mamba2_mixer(
    *,
    hidden: int,
    heads: int,
    head_dim: int,
    groups: int,
    state: int,
    kernel: int,
    bias: bool,
    conv_bias: bool,
    gated_norm: bool = True,
) -> RecurrentState:
    """Mamba-2 (Dao & Gu 2024, arXiv:2405.21060 §7): in_proj h→(I + conv_dim + heads) with
    I = heads·head_dim and conv_dim = I + 2·groups·N; conv over conv_dim channels; dt_bias,
    A_log and D per head; a gated RMSNorm over I; out_proj I→h."""
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * state
    params = (
        hidden * (inner + conv_dim + heads)
        + ((inner + conv_dim + heads) if bias else 0)
        + conv_dim * kernel
        + (conv_dim if conv_bias else 0)
        + 3 * heads
        + (inner if gated_norm else 0)
        + inner * hidden
        + (hidden if bias else 0)
    )
    return RecurrentState(
        kind="mamba2",
        params=params,
        conv_elements=conv_dim * kernel,
        conv_kernel=kernel,
        state_elements=heads * head_dim * state,
        state_fp32=True,
    )


def _ssm_only(c: ConfigFields, mixer: RecurrentState, *, tied_default: bool) -> Architecture:
    """A stack of mixer-only layers (one RMSNorm each), as MambaForCausalLM builds."""
    hidden = c.positive("hidden_size", "d_model")
    layers = c.positive("num_hidden_layers", "n_layer")
    kind: Literal["mamba", "mamba2"] = "mamba" if mixer.kind == "mamba" else "mamba2"
    return Architecture(
        model_type=c.text("model_type", kind),
        vocab_size=c.positive("vocab_size"),
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=1,
        num_kv_heads=1,
        head_dim=hidden,
        v_head_dim=hidden,
        intermediate_size=hidden,
        pre_norms_per_layer=1,
        tie_word_embeddings=c.flag("tie_word_embeddings", tied_default),
        mixer_kinds=(kind,) * layers,
        recurrent=(mixer,),
        no_mlp_layers=tuple(range(layers)),
    )


@register("mamba")
def read_mamba(c: ConfigFields) -> Architecture:
    """Mamba: every layer an RMSNorm and a selective-scan mixer, no attention, no MLP."""
    c.require("hidden_size", "num_hidden_layers", "vocab_size")
    return _ssm_only(c, mamba_mixer(c, c.positive("hidden_size")), tied_default=True)


@register("falcon_mamba")
def read_falcon_mamba(c: ConfigFields) -> Architecture:
    """Falcon Mamba (``modeling_falcon_mamba.py``): Mamba's layer; the RMSNorms it adds on dt, B
    and C inside the mixer carry no weights, so the parameters are Mamba's."""
    c.require("hidden_size", "num_hidden_layers", "vocab_size")
    return _ssm_only(c, mamba_mixer(c, c.positive("hidden_size")), tied_default=True)


@register("mamba2")
def read_mamba2(c: ConfigFields) -> Architecture:
    """Mamba-2: every layer an RMSNorm and an SSD mixer."""
    c.require("hidden_size", "num_hidden_layers", "vocab_size", "num_heads", "head_dim")
    hidden = c.positive("hidden_size")
    mixer = mamba2_mixer(
        hidden=hidden,
        heads=c.positive("num_heads"),
        head_dim=c.positive("head_dim"),
        groups=c.positive("n_groups", default=1),
        state=c.positive("state_size", default=128),
        kernel=c.positive("conv_kernel", default=4),
        bias=c.flag("use_bias", False),
        conv_bias=c.flag("use_conv_bias", True),
    )
    return _ssm_only(c, mixer, tied_default=False)


@register("lfm2")
def read_lfm2(c: ConfigFields) -> Architecture:
    """LFM2: gated short-convolution layers (in_proj h→3h, depthwise conv of ``conv_L_cache``
    taps, out_proj) and GQA layers with per-head q/k norms; SwiGLU MLP whose width is
    auto-adjusted (2/3, multiplier, rounded up to ``block_multiple_of``)."""
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    layers = fields["num_layers"]
    inter = c.positive("intermediate_size")
    if c.flag("block_auto_adjust_ff_dim", True):
        inter = int(2 * inter / 3)
        multiplier = c.raw.get("block_ffn_dim_multiplier", 1.0)
        if multiplier is not None:
            multiple = c.positive("block_multiple_of", default=256)
            inter = int(c.number("block_ffn_dim_multiplier", default=1.0) * inter)
            inter = multiple * ((inter + multiple - 1) // multiple)
    types = c.raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        attention = {i for i, kind in enumerate(types) if "attention" in str(kind)}
    else:
        attention = set(c.raw.get("full_attn_idxs") or range(layers))
    kernel = c.positive("conv_L_cache", default=3)
    bias = c.flag("conv_bias", False)
    conv = RecurrentState(
        kind="short_conv",
        params=hidden * 3 * hidden
        + hidden * kernel
        + hidden * hidden
        + (5 * hidden if bias else 0),
        conv_elements=hidden * kernel,
        conv_kernel=kernel,
        state_elements=0,
    )
    fields.update(
        intermediate_size=inter,
        qk_norm="per_head",
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        mixer_kinds=tuple("attention" if i in attention else "short_conv" for i in range(layers)),
        recurrent=(conv,),
    )
    return Architecture(**fields)


@register("lfm2_moe")
def read_lfm2_moe(c: ConfigFields) -> Architecture:
    """LFM2-MoE: LFM2's short-convolution and attention layers; the MLP width is used as given
    (no auto-adjustment), the first ``num_dense_layers`` layers keep a dense SwiGLU MLP, the rest
    a MoE of ``num_experts`` routed experts (the expert bias is a buffer, not a parameter)."""
    arch = read_lfm2(ConfigFields({**c.raw, "block_auto_adjust_ff_dim": False}))
    first_dense = c.integer("num_dense_layers", default=2)
    return arch.model_copy(
        update={
            "num_experts": c.positive("num_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": c.positive("moe_intermediate_size"),
            "moe_layers": tuple(range(first_dense, arch.num_layers)),
        }
    )

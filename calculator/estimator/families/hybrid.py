"""Attention + state-space hybrids: Jamba (``modeling_jamba.py``), Falcon-H1
(``modeling_falcon_h1.py``), Nemotron-H (``modeling_nemotron_h.py``) and Granite 4.0-H
(``modeling_granitemoehybrid.py``). Only their attention layers keep a KV cache; their Mamba
layers keep the fixed-size state described in ``families/ssm.py``."""

from __future__ import annotations

from typing import Literal

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    MixerKind,
    core_fields,
)
from calculator.estimator.families.registry import register
from calculator.estimator.families.ssm import mamba2_mixer, mamba_mixer


@register("jamba")
def read_jamba(c: ConfigFields) -> Architecture:
    """One attention layer every ``attn_layer_period`` (at ``attn_layer_offset``), Mamba elsewhere
    (with RMSNorms on dt, B and C); MoE every ``expert_layer_period`` layers."""
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    hidden, layers = fields["hidden_size"], fields["num_layers"]
    period = c.positive("attn_layer_period", default=8)
    offset = c.integer("attn_layer_offset", default=4)
    expert_period = c.positive("expert_layer_period", default=2)
    expert_offset = c.integer("expert_layer_offset", default=1)
    mamba = mamba_mixer(c, hidden, prefix="mamba_")
    rank_raw = c.raw.get("mamba_dt_rank", "auto")
    rank = (hidden + 15) // 16 if rank_raw in (None, "auto") else c.positive("mamba_dt_rank")
    state = c.positive("mamba_d_state", default=16)
    mamba = mamba.model_copy(update={"params": mamba.params + rank + 2 * state})
    experts = c.integer("num_experts", default=16)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        mixer_kinds=tuple("attention" if i % period == offset else "mamba" for i in range(layers)),
        recurrent=(mamba,),
        num_experts=experts if experts > 1 else 0,
        experts_per_token=c.positive("num_experts_per_tok", default=2) if experts > 1 else 0,
        moe_intermediate_size=c.positive("intermediate_size") if experts > 1 else 0,
        moe_layers=tuple(i for i in range(layers) if i % expert_period == expert_offset)
        if experts > 1
        else (),
    )
    return Architecture(**fields)


@register("falcon_h1")
def read_falcon_h1(c: ConfigFields) -> Architecture:
    """Every layer runs attention and a Mamba-2 mixer side by side, then a SwiGLU MLP."""
    c.require("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    inner = c.integer("mamba_d_ssm", default=0) or c.positive("mamba_expand", default=2) * hidden
    heads = c.positive("mamba_n_heads", default=128)
    head_dim_raw = c.raw.get("mamba_d_head", "auto")
    head_dim = inner // heads if head_dim_raw in (None, "auto") else c.positive("mamba_d_head")
    if heads * head_dim != inner:
        raise ConfigError(
            "mamba_n_heads × mamba_d_head must equal the Mamba width.", "mamba_d_head"
        )
    mixer = mamba2_mixer(
        hidden=hidden,
        heads=heads,
        head_dim=head_dim,
        groups=c.positive("mamba_n_groups", default=1),
        state=c.positive("mamba_d_state", default=256),
        kernel=c.positive("mamba_d_conv", default=4),
        bias=c.flag("mamba_proj_bias", False),
        conv_bias=c.flag("mamba_conv_bias", True),
        gated_norm=c.flag("mamba_rms_norm", False),
    )
    bias = c.flag("attention_bias", False)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=c.flag("mlp_bias", False),
        parallel_recurrent=mixer,
        recurrent=(mixer,),
    )
    return Architecture(**fields)


_NEMOTRON_PATTERN = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}


@register("nemotron_h")
def read_nemotron_h(c: ConfigFields) -> Architecture:
    """Each layer is one block behind one RMSNorm: a Mamba-2 mixer, attention, a squared-ReLU
    MLP, or a MoE of non-gated experts with a shared expert (``layers_block_type``, or the
    older ``hybrid_override_pattern`` string: M, *, -, E). With ``moe_latent_size`` (Nemotron 3
    Super / Ultra) the routed experts work in that latent width, between a down- and an
    up-projection of the hidden state (``NemotronHMoE`` in ``modeling_nemotron_h.py``)."""
    c.require("hidden_size", "num_attention_heads", "vocab_size")
    raw_types = c.raw.get("layers_block_type") or c.raw.get("layer_types")
    pattern = c.raw.get("hybrid_override_pattern")
    if isinstance(raw_types, list):
        types = [str(kind) for kind in raw_types]
    elif isinstance(pattern, str):
        if set(pattern) - set(_NEMOTRON_PATTERN):
            raise ConfigError(
                "hybrid_override_pattern has unknown symbols.", "hybrid_override_pattern"
            )
        types = [_NEMOTRON_PATTERN[symbol] for symbol in pattern]
    else:
        raise ConfigError("Config is missing the field 'layers_block_type'.", "layers_block_type")
    layers = len(types)
    c = ConfigFields({**c.raw, "num_hidden_layers": layers})
    fields = core_fields(c)
    hidden = fields["hidden_size"]
    mixer = mamba2_mixer(
        hidden=hidden,
        heads=c.positive("mamba_num_heads"),
        head_dim=c.positive("mamba_head_dim"),
        groups=c.positive("n_groups", default=1),
        state=c.positive("ssm_state_size", default=128),
        kernel=c.positive("conv_kernel", default=4),
        bias=c.flag("use_bias", False),
        conv_bias=c.flag("use_conv_bias", True),
    )
    mixers: list[MixerKind] = []
    for kind in types:
        if kind in {"linear_attention", "mamba"}:
            mixers.append("mamba2")
        elif kind in {"full_attention", "attention"}:
            mixers.append("attention")
        else:
            mixers.append("none")
    moe = tuple(i for i, kind in enumerate(types) if kind == "moe")
    no_mlp = tuple(i for i, kind in enumerate(types) if kind not in {"mlp", "moe"})
    experts = c.integer("n_routed_experts", default=0) if moe else 0
    bias = c.flag("attention_bias", False)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        hidden_act=c.text("mlp_hidden_act", "relu2"),
        mlp_gated=False,
        mlp_bias=c.flag("mlp_bias", False),
        qkv_bias=bias,
        o_bias=bias,
        pre_norms_per_layer=1,
        mixer_kinds=tuple(mixers),
        recurrent=(mixer,),
        no_mlp_layers=no_mlp,
        num_experts=experts,
        experts_per_token=c.positive("num_experts_per_tok") if experts else 0,
        moe_intermediate_size=c.positive("moe_intermediate_size") if experts else 0,
        num_shared_experts=c.integer("n_shared_experts", default=1) if experts else 0,
        shared_expert_intermediate_size=c.integer("moe_shared_expert_intermediate_size", default=0)
        if experts
        else 0,
        moe_layers=moe if experts else (),
        expert_width=c.integer("moe_latent_size", default=0) or None if experts else None,
    )
    return Architecture(**fields)


@register("granitemoehybrid")
def read_granitemoehybrid(c: ConfigFields) -> Architecture:
    """Granite 4.0-H: Mamba-2 or attention per layer (``layer_types``), then a shared SwiGLU MLP
    of ``shared_intermediate_size`` plus, when ``num_local_experts`` > 0, routed experts."""
    c.require("hidden_size", "num_hidden_layers", "num_attention_heads")
    fields = core_fields(c)
    hidden, layers = fields["hidden_size"], fields["num_layers"]
    types = c.raw.get("layer_types") or c.raw.get("layers_block_type")
    if not isinstance(types, list) or len(types) != layers:
        types = ["mamba"] * layers
    mixers: tuple[Literal["attention", "mamba2"], ...] = tuple(
        "mamba2" if str(kind) in {"mamba", "linear_attention"} else "attention" for kind in types
    )
    expand = c.positive("mamba_expand", default=2)
    mamba_heads = c.positive("mamba_n_heads", default=128)
    # GraniteMoeHybridConfig: mamba_d_head "auto" (its default) is mamba_expand × hidden / heads.
    mamba_head_dim = (
        expand * hidden // mamba_heads
        if c.raw.get("mamba_d_head", "auto") in (None, "auto")
        else c.positive("mamba_d_head")
    )
    mixer = mamba2_mixer(
        hidden=hidden,
        heads=mamba_heads,
        head_dim=mamba_head_dim,
        groups=c.positive("mamba_n_groups", default=1),
        state=c.positive("mamba_d_state", default=256),
        kernel=c.positive("mamba_d_conv", default=4),
        bias=c.flag("mamba_proj_bias", False),
        conv_bias=c.flag("mamba_conv_bias", True),
    )
    if mixer.params and mamba_heads * mamba_head_dim != expand * hidden:
        raise ConfigError(
            "mamba_n_heads × mamba_d_head must equal mamba_expand × hidden_size.", "mamba_d_head"
        )
    experts = c.integer("num_local_experts", default=0)
    shared = c.positive("shared_intermediate_size")
    bias = c.flag("attention_bias", False)
    common = {
        "qkv_bias": bias,
        "o_bias": bias,
        "mixer_kinds": mixers,
        "recurrent": (mixer,),
    }
    if experts:
        fields.update(
            intermediate_size=c.positive("intermediate_size"),
            num_experts=experts,
            experts_per_token=c.positive("num_experts_per_tok"),
            moe_intermediate_size=c.positive("intermediate_size"),
            num_shared_experts=1,
            shared_expert_intermediate_size=shared,
            moe_layers=tuple(range(layers)),
            **common,
        )
    else:
        fields.update(intermediate_size=shared, **common)
    return Architecture(**fields)


@register("bamba")
def read_bamba(c: ConfigFields) -> Architecture:
    """Bamba (``modeling_bamba.py``): Granite 4.0-H's layer without experts. Mamba-2 mixers
    everywhere except the ``attn_layer_indices`` attention layers, a SwiGLU MLP of
    ``intermediate_size`` in every layer; ``mamba_d_head`` "auto" is mamba_expand × hidden /
    mamba_n_heads (``BambaConfig``)."""
    c.require("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    layers = c.positive("num_hidden_layers")
    attention = set(c.integers("attn_layer_indices"))
    raw = {k: v for k, v in c.raw.items() if v is not None}
    raw["layer_types"] = ["attention" if i in attention else "mamba" for i in range(layers)]
    raw["shared_intermediate_size"] = c.positive("intermediate_size")
    raw["num_local_experts"] = 0
    if raw.get("mamba_d_head", "auto") == "auto":
        heads = c.positive("mamba_n_heads", default=128)
        raw["mamba_d_head"] = (
            c.positive("mamba_expand", default=2) * c.positive("hidden_size") // heads
        )
    return read_granitemoehybrid(ConfigFields(raw))

"""MiniMax-Text-01 / MiniMax-M1 (``modeling_minimax.py``) and MiniMax-M2
(``modeling_minimax_m2.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    MixerKind,
    RecurrentState,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


@register("minimax_m2")
def read_minimax_m2(c: ConfigFields) -> Architecture:
    """Full attention with RMSNorm over all of q and k, every MLP a routed MoE (no shared expert)."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={
            "qk_norm": "full" if c.flag("use_qk_norm", True) else "none",
            "num_experts": c.positive("num_local_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )


def lightning_attention(c: ConfigFields, hidden: int, heads: int, head_dim: int) -> RecurrentState:
    """Lightning attention (``MiniMaxLightningAttention``; Qin et al. 2024, arXiv:2401.04658):
    qkv_proj hidden → 3·heads·head_dim, an RMSNorm over heads·head_dim, output_gate hidden →
    heads·head_dim and out_proj back, all bias-free. Per sequence it keeps a heads × head_dim ×
    head_dim key-value state in the model dtype (``attn_weights_inter``), no convolution state."""
    inner = heads * head_dim
    return RecurrentState(
        kind="lightning",
        params=hidden * 3 * inner + inner + hidden * inner + inner * hidden,
        conv_elements=0,
        state_elements=heads * head_dim * head_dim,
        state_fp32=False,
    )


@register("minimax")
def read_minimax(c: ConfigFields) -> Architecture:
    """Lightning-attention layers interleaved with softmax-attention layers (``layer_types``:
    "linear_attention" / "full_attention"; only the latter keep a KV cache), every MLP a MoE of
    ``num_local_experts`` experts of ``intermediate_size``."""
    arch = read_llama_like(c)
    layers = arch.num_layers
    types = c.raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        mixers: tuple[MixerKind, ...] = tuple(
            "lightning" if "linear" in str(kind) else "attention" for kind in types
        )
    else:
        # MiniMaxConfig's default: full attention on even layers, lightning on odd ones.
        mixers = tuple("attention" if i % 2 == 0 else "lightning" for i in range(layers))
    return _minimax(c, arch, mixers)


@register("minimax_text_01", "minimax_m1")
def read_minimax_remote_code(c: ConfigFields) -> Architecture:
    """MiniMax-Text-01 / MiniMax-M1 as released for their remote code (``model_type``
    "minimax_text_01" / "minimax_m1"): the same layers as ``minimax``, but the layer kinds come
    from ``attn_type_list`` (0 = lightning attention, 1 = softmax attention, one entry per layer;
    the release notes' seven lightning layers then one softmax layer), which transformers'
    MiniMaxConfig does not read."""
    arch = read_llama_like(c)
    layers = arch.num_layers
    kinds = c.raw.get("attn_type_list")
    if not (isinstance(kinds, list) and len(kinds) == layers and all(k in (0, 1) for k in kinds)):
        raise ConfigError(
            f"The field 'attn_type_list' must give 0 (lightning attention) or 1 (softmax "
            f"attention) for each of the {layers} layers.",
            field="attn_type_list",
        )
    mixers: tuple[MixerKind, ...] = tuple(
        "attention" if kind == 1 else "lightning" for kind in kinds
    )
    return _minimax(c, arch, mixers)


def _minimax(c: ConfigFields, arch: Architecture, mixers: tuple[MixerKind, ...]) -> Architecture:
    """The MiniMax layer on top of the Llama-shaped fields: bias-free attention, the given mixer
    per layer, and a MoE MLP on every layer."""
    layers = arch.num_layers
    return arch.model_copy(
        update={
            "qkv_bias": False,
            "o_bias": False,
            "layer_types": (),
            "mixer_kinds": mixers,
            "recurrent": (
                lightning_attention(c, arch.hidden_size, arch.num_attention_heads, arch.head_dim),
            ),
            "num_experts": c.positive("num_local_experts"),
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(layers)),
        }
    )

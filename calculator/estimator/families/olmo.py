"""OLMo 1 (``modeling_olmo.py``), OLMo 2 / 3 (``modeling_olmo2.py``, ``modeling_olmo3.py``),
OLMo Hybrid (``modeling_olmo_hybrid.py``), OLMoE (``modeling_olmoe.py``) and FlexOlmo
(``modeling_flex_olmo.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
    MixerKind,
)
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.qwen_next import gated_deltanet
from calculator.estimator.families.registry import register


@register("olmo")
def read_olmo(c: ConfigFields) -> Architecture:
    """OLMo 1 (``OlmoLayerNorm``): LayerNorms without weight or bias, so its norms hold no
    parameters; otherwise Llama's layer (``clip_qkv`` clamps activations, no weights)."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"pre_norms_per_layer": 0, "final_norm": False})


@register("olmo2")
def read_olmo2(c: ConfigFields) -> Architecture:
    """Norms after attention and MLP (not before), RMSNorm over all of q and k."""
    arch = read_llama_like(c)
    return arch.model_copy(
        update={"qk_norm": "full", "pre_norms_per_layer": 0, "post_norms_per_layer": 2}
    )


@register("olmo3")
def read_olmo3(c: ConfigFields) -> Architecture:
    """OLMo 2's layout with sliding-window layers (``modeling_olmo3.py``)."""
    return read_olmo2(c)


def _olmo_hybrid_mixers(c: ConfigFields, layers: int) -> tuple[MixerKind, ...]:
    """``OlmoHybridConfig.__post_init__``: ``layer_types`` when given, else full attention on
    every fourth layer (index 3, 7, ...), the last layer when that leaves none."""
    types = c.raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return tuple(
            "attention" if kind == "full_attention" else "gated_deltanet" for kind in types
        )
    kinds: list[MixerKind] = [
        "attention" if i % 4 == 3 else "gated_deltanet" for i in range(layers)
    ]
    if "attention" not in kinds:
        kinds[-1] = "attention"
    return tuple(kinds)


@register("olmo_hybrid")
def read_olmo_hybrid(c: ConfigFields) -> Architecture:
    """OLMo Hybrid: OLMo 2's attention layers (post-norms, RMSNorm over all of q and k) between
    Gated DeltaNet layers (separate q/k/v/a/b/g projections, a bias-free depthwise conv,
    ``A_log`` and ``dt_bias`` per value head, a gated RMSNorm of one value head; two pre-norms,
    so two norms per layer either way). The linear heads default as ``OlmoHybridConfig`` does:
    as many as attention heads, key head 0.75 · hidden / heads, value head twice that. The
    Gated DeltaNet state is value heads × key head × value head in fp32."""
    heads = c.positive("num_attention_heads")
    hidden = c.positive("hidden_size")
    raw = {k: v for k, v in c.raw.items() if v is not None}
    raw.setdefault("linear_num_key_heads", heads)
    raw.setdefault("linear_num_value_heads", heads)
    raw.setdefault("linear_key_head_dim", int(0.75 * hidden / raw["linear_num_key_heads"]))
    raw.setdefault("linear_value_head_dim", 2 * raw["linear_key_head_dim"])
    fields = ConfigFields(raw)
    arch = read_olmo2(fields)
    return arch.model_copy(
        update={
            "mixer_kinds": _olmo_hybrid_mixers(fields, arch.num_layers),
            "recurrent": (gated_deltanet(fields, arch.hidden_size),),
            "layer_types": (),
            "sliding_window": None,
        }
    )


def _all_moe(arch: Architecture, c: ConfigFields) -> dict[str, object]:
    """Every MLP is ``num_experts`` routed experts of ``intermediate_size`` behind a bias-free
    router."""
    return {
        "num_experts": c.positive("num_experts"),
        "experts_per_token": c.positive("num_experts_per_tok"),
        "moe_intermediate_size": arch.intermediate_size,
        "moe_layers": tuple(range(arch.num_layers)),
    }


@register("olmoe")
def read_olmoe(c: ConfigFields) -> Architecture:
    """OLMoE: Llama's pre-norms, RMSNorm over all of q and k (``OlmoeAttention``), MoE in every
    layer."""
    arch = read_llama_like(c)
    return arch.model_copy(update={"qk_norm": "full", **_all_moe(arch, c)})


@register("flex_olmo")
def read_flex_olmo(c: ConfigFields) -> Architecture:
    """FlexOlmo: OLMo 2's layer (post-norms, full q/k RMSNorm) with MoE in every layer."""
    arch = read_olmo2(c)
    return arch.model_copy(update=_all_moe(arch, c))

"""OLMo 1 (``modeling_olmo.py``), OLMo 2 / 3 (``modeling_olmo2.py``, ``modeling_olmo3.py``),
OLMoE (``modeling_olmoe.py``) and FlexOlmo (``modeling_flex_olmo.py``)."""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigFields,
)
from calculator.estimator.families.llama import read_llama_like
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

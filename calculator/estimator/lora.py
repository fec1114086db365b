"""LoRA adapters: which modules get them and how many parameters they add."""

from __future__ import annotations

from collections.abc import Sequence

from calculator.estimator.architecture import Architecture

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# Families whose attention and MLP inputs are one fused linear each in transformers
# (``Phi3Attention.qkv_proj``, ``Phi3MLP.gate_up_proj`` in modeling_phi3.py, 5.24.0).
FUSED_PROJECTIONS = frozenset({"phi3"})
# MLA's linears as modeling_deepseek_v2.py / modeling_glm4_moe_lite.py (5.24.0) name them; the
# older names stay accepted: q_proj is the query's (second) projection, k_proj is kv_b_proj.
MLA_ALIASES = {"q_b_proj": "q_proj", "kv_b_proj": "k_proj"}


def resolve_targets(arch: Architecture, targets: Sequence[str] | str) -> frozenset[str]:
    """'all-linear' is every linear of a decoder layer except the LM head (PEFT's rule), under
    the names the family's modules have: one ``qkv_proj`` and one ``gate_up_proj`` in Phi-3 and
    Phi-4, the low-rank ``q_a``/``q_b`` (or ``q_proj``), ``kv_a_proj_with_mqa`` and ``kv_b_proj``
    in MLA. A fused name on a family without fused linears means its parts."""
    fused = arch.model_type in FUSED_PROJECTIONS
    mla = arch.attention_kind == "mla"
    if targets == "all-linear":
        if fused:
            chosen = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}
        elif mla:
            chosen = {"q_proj", "k_proj", "kv_a_proj_with_mqa", "o_proj", *ALL_LINEAR[4:]}
            if arch.q_lora_rank:
                chosen.add("q_a_proj")
        else:
            chosen = set(ALL_LINEAR)
    else:
        chosen = set(targets)
    if not fused:
        if "qkv_proj" in chosen:
            chosen |= {"q_proj", "k_proj", "v_proj"}
        if "gate_up_proj" in chosen:
            chosen |= {"gate_proj", "up_proj"}
        chosen -= {"qkv_proj", "gate_up_proj"}
    if mla:
        chosen = {MLA_ALIASES.get(name, name) for name in chosen}
        chosen.discard("v_proj")  # MLA has no separate value projection
    else:
        chosen -= {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}
    # Plain MLPs have one input projection; its adapter is counted as up_proj.
    if not arch.mlp_gated and "gate_proj" in chosen:
        chosen.discard("gate_proj")
        chosen.add("up_proj")
    return frozenset(chosen)


def module_shapes(arch: Architecture, index: int) -> dict[str, tuple[int, int, int]]:
    """(in_features, out_features, copies) of each adaptable linear in layer ``index``.

    MoE layers carry one copy per routed expert (PEFT wraps each expert's linear).
    """
    h = arch.hidden_size
    if arch.attention_kind == "mla":
        q_in = arch.q_lora_rank or h
        shapes = {
            "q_proj": (q_in, arch.q_width, 1),
            "k_proj": (
                (arch.kv_lora_rank or 0),
                arch.num_attention_heads
                * (arch.head_dim - (arch.qk_rope_head_dim or 0) + arch.v_head_dim),
                1,
            ),
            "v_proj": (0, 0, 0),
            "o_proj": (arch.attn_out_width, h, 1),
            "q_a_proj": (h, arch.q_lora_rank or 0, 1 if arch.q_lora_rank else 0),
            "kv_a_proj_with_mqa": (h, (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0), 1),
        }
    else:
        shapes = {
            "q_proj": (h, arch.q_width, 1),
            "k_proj": (h, arch.kv_width, 1),
            "v_proj": (h, arch.kv_width, 1),
            "o_proj": (arch.attn_out_width, h, 1),
        }
    if arch.is_moe_layer(index):
        inner, copies = arch.moe_intermediate_size, arch.num_experts
    else:
        inner, copies = arch.intermediate_size, 1
    shapes["gate_proj"] = (h, inner, copies if arch.mlp_gated else 0)
    shapes["up_proj"] = (h, inner, copies)
    shapes["down_proj"] = (inner, h, copies)
    if arch.model_type in FUSED_PROJECTIONS:
        shapes["qkv_proj"] = (h, arch.q_width + 2 * arch.kv_width, 1)
        shapes["gate_up_proj"] = (h, 2 * inner, copies)
    return shapes


def adapter_params(arch: Architecture, *, rank: int, targets: frozenset[str]) -> int:
    """``r · (in + out)`` per adapted linear (Hu et al. 2021, LoRA, arXiv:2106.09685 §4.1)."""
    total = 0
    for index, count in arch.layer_kinds:
        for name, (d_in, d_out, copies) in module_shapes(arch, index).items():
            if name in targets:
                total += count * copies * rank * (d_in + d_out)
    return total

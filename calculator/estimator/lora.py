"""LoRA adapters: which modules get them and how many parameters they add."""

from __future__ import annotations

from collections.abc import Sequence

from calculator.estimator.architecture import Architecture

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def resolve_targets(arch: Architecture, targets: Sequence[str] | str) -> frozenset[str]:
    """'all-linear' is every linear of a decoder layer except the LM head (PEFT's rule)."""
    chosen = set(ALL_LINEAR if targets == "all-linear" else targets)
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
    return shapes


def adapter_params(arch: Architecture, *, rank: int, targets: frozenset[str]) -> int:
    """``r · (in + out)`` per adapted linear (Hu et al. 2021, LoRA, arXiv:2106.09685 §4.1)."""
    total = 0
    for index, count in arch.layer_kinds:
        for name, (d_in, d_out, copies) in module_shapes(arch, index).items():
            if name in targets:
                total += count * copies * rank * (d_in + d_out)
    return total

"""Bytes per element of each dtype, and how quantized weights are stored."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.messages import gettext_noop

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "int2": 0.25,
}


@dataclass(frozen=True)
class WeightFormat:
    """Storage of one weight element, and the per-group metadata that comes with it."""

    label: str
    data_bytes: float
    overhead_bytes: float
    """Scales/zero-points per element, amortised over the group."""
    source: str


# Group-wise formats, as the libraries store them.
WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "fp32": WeightFormat("fp32", 4.0, 0.0, "IEEE 754 single precision"),
    "fp16": WeightFormat("fp16", 2.0, 0.0, "IEEE 754 half precision"),
    "bf16": WeightFormat("bf16", 2.0, 0.0, "bfloat16"),
    "fp8": WeightFormat(
        gettext_noop("FP8 E4M3, one fp32 scale per 128×128 block"),
        1.0,
        4.0 / (128 * 128),
        gettext_noop(
            "DeepSeek-V3 technical report (arXiv:2412.19437) §3.3.2: block-wise FP8 weights, "
            "128×128 blocks with one scale each"
        ),
    ),
    "int8": WeightFormat(
        gettext_noop("INT8, one fp32 scale per output row (bitsandbytes LLM.int8 'SCB')"),
        1.0,
        0.0,
        gettext_noop(
            "Dettmers et al. 2022, LLM.int8() (arXiv:2208.07339) §3: vector-wise quantization, one "
            "scale per row; bitsandbytes Int8Params stores them as fp32 SCB"
        ),
    ),
    "int4": WeightFormat(
        gettext_noop(
            "INT4, group size 128, fp16 scale + 4-bit zero point per group (AWQ/GPTQ storage)"
        ),
        0.5,
        (2.0 + 0.5) / 128,
        gettext_noop(
            "Lin et al. 2024, AWQ (arXiv:2306.00978) §4 and Frantar et al. 2023, GPTQ "
            "(arXiv:2210.17323) §5: group size 128 with per-group scale and zero point"
        ),
    ),
    "int2": WeightFormat(
        gettext_noop("INT2, group size 64, fp16 scale + fp16 zero per group (HQQ-style storage)"),
        0.25,
        4.0 / 64,
        gettext_noop(
            "Badri & Shaji 2023, Half-Quadratic Quantization (HQQ) docs: 2-bit with group size 64, "
            "fp16 scale and zero"
        ),
    ),
    "nf4": WeightFormat(
        gettext_noop(
            "NF4, blocks of 64, double-quantized absmax (8-bit per block, fp32 per 256 blocks)"
        ),
        0.5,
        1.0 / 64 + 4.0 / (64 * 256),
        gettext_noop(
            "Dettmers et al. 2023, QLoRA (arXiv:2305.14314) §3: 4-bit NormalFloat, blocksize 64, "
            "double quantization of the constants (8-bit, blocksize 256)"
        ),
    ),
}

QUANTIZED = frozenset({"fp8", "int8", "int4", "int2", "nf4"})


def compute_dtype(precision: str) -> str:
    """The dtype activations and (by default) the KV cache use for a weight precision."""
    if precision in {"fp32", "fp16", "bf16"}:
        return precision
    return "bf16"

"""How a published checkpoint stores its weights, from its config.json's ``quantization_config``.

The method names are those the checkpoints write (transformers ``utils/quantization_config.py``
``QuantizationMethod``: ``fp8``, ``mxfp4``, ``awq``, ``gptq``, ``bitsandbytes``,
``compressed-tensors``, …); compressed-tensors describes its weights in ``config_groups`` with
``num_bits`` and ``type`` (neuralmagic/compressed-tensors ``QuantizationArgs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Bytes per element of the safetensors dtypes (safetensors format spec, "dtype").
SAFETENSORS_DTYPE_BYTES = {
    "F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
    "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1,
}  # fmt: skip


@dataclass(frozen=True)
class CheckpointQuantization:
    method: str  # as the config names it
    weight_bits: int | None
    precision: str | None  # the estimator's precision that stores it that way, if any
    vllm: str  # the vLLM weight layout with the same bytes per weight ("none": 16-bit)


def _compressed_tensors_bits(quant: Mapping[str, Any]) -> tuple[int | None, str | None]:
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping):
        return None, None
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if isinstance(weights, Mapping) and isinstance(weights.get("num_bits"), int):
            return int(weights["num_bits"]), str(weights.get("type") or "int")
    return None, None


def checkpoint_quantization(config: Mapping[str, Any]) -> CheckpointQuantization | None:
    """The checkpoint's stored weight format, or None for a plain (bf16/fp16/fp32) release."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        text = config.get("text_config")
        if isinstance(text, Mapping):
            return checkpoint_quantization(text)
        return None
    method = str(quant.get("quant_method") or "").lower()
    bits = quant.get("bits") or quant.get("w_bit")
    bits = int(bits) if isinstance(bits, int) else None
    if method == "fp8":
        return CheckpointQuantization(method, 8, "fp8", "fp8")
    if method == "mxfp4":
        return CheckpointQuantization(method, 4, "int4", "mxfp4")
    if method in {"awq", "gptq"}:
        precision = {4: "int4", 8: "int8"}.get(bits or 4)
        return CheckpointQuantization(method, bits or 4, precision, method)
    if method == "bitsandbytes":
        four = bool(quant.get("load_in_4bit"))
        return CheckpointQuantization(
            method, 4 if four else 8, "int4" if four else "int8", "bitsandbytes"
        )
    if method == "compressed-tensors":
        num_bits, kind = _compressed_tensors_bits(quant)
        if num_bits == 8:
            precision = "fp8" if kind == "float" else "int8"
            return CheckpointQuantization(method, 8, precision, precision)
        if num_bits == 4:
            # Packed 4-bit weights with a 16-bit scale per group, as GPTQ stores them.
            return CheckpointQuantization(method, 4, "int4", "gptq")
        return CheckpointQuantization(method, num_bits, None, "none")
    return CheckpointQuantization(method or "unknown", bits, None, "none")


def stored_bytes(dtypes: Mapping[str, int]) -> int | None:
    """What a checkpoint's tensors occupy as stored: elements × bytes of their safetensors dtype
    (packed int32 words, scales and zero points, layers left unquantized, all as they are).
    None when there is nothing to count or a dtype is unknown."""
    if not dtypes or any(dtype not in SAFETENSORS_DTYPE_BYTES for dtype in dtypes):
        return None
    return sum(count * SAFETENSORS_DTYPE_BYTES[dtype] for dtype, count in dtypes.items())

"""How a published checkpoint stores its weights, from its config.json's ``quantization_config``.

The method names are those the checkpoints write (transformers ``utils/quantization_config.py``
``QuantizationMethod``: ``fp8``, ``mxfp4``, ``awq``, ``gptq``, ``bitsandbytes``,
``compressed-tensors``, …); compressed-tensors describes its weights in ``config_groups`` with
``num_bits`` and ``type`` (neuralmagic/compressed-tensors ``QuantizationArgs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import Plan
from calculator.estimator.runtimes.vllm import Quantization
from calculator.estimator.schemas import ConfigModel, EstimateRequest

# Bytes per element of the safetensors dtypes (safetensors format spec, "dtype").
SAFETENSORS_DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


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


CHECKPOINT_SOURCE = (
    "Hugging Face Hub safetensors metadata (tensor elements per dtype); safetensors format "
    "spec (dtype sizes)"
)
CHECKPOINT_NOTE = gettext_noop(
    "Weights: the checkpoint's own %(bytes)s bytes as its safetensors files store them "
    "(%(dtypes)s), scales, zero points and layers left unquantized included, split over "
    "%(tp)s GPU(s)."
)


def checkpoint_weight_bytes(
    request: EstimateRequest, *, vllm_quantization: str | None = None
) -> int | None:
    """The checkpoint's stored bytes when they are the weights: a pre-quantized checkpoint (its
    ``quantization_config`` names a format the estimator models) whose safetensors dtypes are
    known, run in its own format — the request's precision under transformers, vLLM's
    ``--quantization`` (default: the checkpoint's) under vLLM. None otherwise, and always for
    llama.cpp, which loads a GGUF conversion rather than the checkpoint."""
    model = request.model
    if not isinstance(model, ConfigModel) or not model.checkpoint_dtypes:
        return None
    stored = checkpoint_quantization(model.config)
    if stored is None or stored.precision is None:
        return None
    if request.runtime == "vllm":
        own = vllm_quantization == stored.vllm
    else:
        own = request.runtime == "transformers" and request.precision == stored.precision
    return stored_bytes(model.checkpoint_dtypes) if own else None


def checkpoint_vllm_quantization(request: EstimateRequest) -> Quantization:
    """The vLLM weight layout the checkpoint's quantization_config names ("none": 16-bit)."""
    if not isinstance(request.model, ConfigModel):
        return "none"
    stored = checkpoint_quantization(request.model.config)
    return cast("Quantization", stored.vllm) if stored else "none"


def dtype_summary(request: EstimateRequest) -> str:
    model = request.model
    dtypes = model.checkpoint_dtypes if isinstance(model, ConfigModel) else None
    return ", ".join(sorted(dtypes or {}))


def note_checkpoint_bytes(notes: Notes, request: EstimateRequest, stored: int, plan: Plan) -> None:
    notes.add(
        CHECKPOINT_NOTE,
        CHECKPOINT_SOURCE,
        bytes=f"{stored:,}",
        dtypes=dtype_summary(request),
        tp=plan.tp * plan.parameter_shards,
    )

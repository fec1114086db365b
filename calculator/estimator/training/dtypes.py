"""The element sizes one training run works in, chosen by its mode, precision and stack."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.precision import BYTES_PER_ELEMENT, WEIGHT_FORMATS, compute_dtype
from calculator.estimator.schemas import EstimateRequest
from calculator.estimator.stacks import Stack

FP32 = 4.0


@dataclass(frozen=True)
class Loading:
    """How the model's weights are stored and its layers run."""

    weight_format: str
    other_bytes: float
    """Bytes per element of what a quantized format leaves unpacked (embeddings, LM head, norms)."""
    act_bytes: float
    residual_bytes: float
    autocast: bool


@dataclass(frozen=True)
class TrainingDtypes:
    loading: Loading
    lora: bool
    param_bytes: float
    """Bytes per element of the parameters the optimizer sees (fp32 under mixed precision)."""
    adapter_bytes: float
    fp32_master: bool
    """Mixed precision of a full model: fp32 weights that autocast copies to 16 bits."""
    working_bytes: float
    """Bytes per element of a gathered layer's parameters (the autocast dtype when mixed)."""
    fp32_partitions: bool
    """DeepSpeed trains 16-bit weights through an fp32 optimizer (master weights and states)."""

    @property
    def act_bytes(self) -> float:
        return self.loading.act_bytes

    @property
    def trainable_bytes(self) -> float:
        return self.adapter_bytes if self.lora else self.param_bytes

    @property
    def state_bytes(self) -> float:
        """The dtype the optimizer's states take per element."""
        return FP32 if self.fp32_partitions else self.trainable_bytes


def _qlora_in_stack_dtype(request: EstimateRequest, stack: Stack, notes: Notes) -> Loading:
    compute = compute_dtype(request.precision)
    p = BYTES_PER_ELEMENT[compute]
    notes.add(
        gettext_noop(
            "QLoRA: base linears in NF4 with double quantization; embeddings, LM head and "
            "norms stay in %(dtype)s, as the stack loads them."
        ),
        WEIGHT_FORMATS["nf4"].source + "; " + stack.source,
        dtype=compute,
    )
    return Loading("nf4", other_bytes=p, act_bytes=p, residual_bytes=p, autocast=False)


def _qlora_peft(request: EstimateRequest, stack: Stack, notes: Notes) -> Loading:
    notes.add(
        gettext_noop(
            "QLoRA: base linears in NF4 with double quantization; embeddings, LM head and norms "
            "upcast to fp32 by prepare_model_for_kbit_training; compute in bf16."
        ),
        WEIGHT_FORMATS["nf4"].source + "; " + gettext_noop("PEFT prepare_model_for_kbit_training"),
    )
    p = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    return Loading("nf4", other_bytes=FP32, act_bytes=p, residual_bytes=FP32, autocast=True)


def _lora(request: EstimateRequest, stack: Stack, notes: Notes) -> Loading:
    quantized = request.precision not in {"fp32", "fp16", "bf16"}
    p = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    other = p if quantized else BYTES_PER_ELEMENT[request.precision]
    return Loading(
        request.precision, other_bytes=other, act_bytes=p, residual_bytes=p, autocast=False
    )


def _mixed_precision(request: EstimateRequest, stack: Stack, notes: Notes) -> Loading:
    notes.add(
        gettext_noop(
            "Mixed precision: fp32 weights, gradients and optimizer states; forward and "
            "backward autocast to %(dtype)s, whose weight copies live until backward frees them."
        ),
        gettext_noop("Micikevicius et al. 2018 (arXiv:1710.03740) §3; torch.autocast docs"),
        dtype=request.precision,
    )
    p = BYTES_PER_ELEMENT[request.precision]
    return Loading("fp32", other_bytes=FP32, act_bytes=p, residual_bytes=FP32, autocast=True)


def _one_dtype(request: EstimateRequest, stack: Stack, notes: Notes) -> Loading:
    p = BYTES_PER_ELEMENT[request.precision]
    return Loading(request.precision, other_bytes=p, act_bytes=p, residual_bytes=p, autocast=False)


def _loading_for(
    request: EstimateRequest, stack: Stack
) -> Callable[[EstimateRequest, Stack, Notes], Loading]:
    if request.mode == "qlora":
        return _qlora_peft if stack.qlora_fp32_non_quantized else _qlora_in_stack_dtype
    if request.mode == "lora":
        return _lora
    return _mixed_precision if request.mixed_precision else _one_dtype


def training_dtypes(request: EstimateRequest, stack: Stack, notes: Notes) -> TrainingDtypes:
    """The dtypes of weights, activations, trainable parameters and optimizer states."""
    loading = _loading_for(request, stack)(request, stack, notes)
    lora = request.mode in {"lora", "qlora"}
    fp32_master = request.mixed_precision and not lora
    param_bytes = FP32 if fp32_master else BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    in_compute_dtype = lora and stack.adapters_in_compute_dtype
    if in_compute_dtype:
        notes.add(
            gettext_noop(
                "LoRA adapters, their gradients and optimizer states in %(dtype)s (the stack "
                "trains in the model's dtype; PEFT's default would upcast them to fp32)."
            ),
            stack.source,
            dtype=compute_dtype(request.precision),
        )
    return TrainingDtypes(
        loading=loading,
        lora=lora,
        param_bytes=param_bytes,
        adapter_bytes=loading.act_bytes if in_compute_dtype else FP32,
        fp32_master=fp32_master,
        working_bytes=loading.act_bytes if request.mixed_precision else param_bytes,
        fp32_partitions=stack.fp32_optimizer_partitions and not lora and param_bytes < FP32,
    )

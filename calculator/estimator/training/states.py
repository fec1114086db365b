"""Parameters, gradients and optimizer states: what one GPU keeps of the whole model between
steps, and the step's own temporaries. Bytes stay floats here; each phase rounds its sums."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.architecture import Architecture
from calculator.estimator.checkpoint import checkpoint_weight_bytes, note_checkpoint_bytes
from calculator.estimator.lora import adapter_params, module_shapes, resolve_targets
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.optimizer import (
    BNB_MIN_8BIT_SIZE,
    DEEPSPEED_MEMORY_DOCS,
    OptimizerProfile,
    adafactor_state_elements,
    fp32_gradient_bytes,
    fp32_master_bytes,
    optimizer_profile,
)
from calculator.estimator.parallelism import Plan
from calculator.estimator.schemas import EstimateRequest, StackSwitches
from calculator.estimator.stacks import Stack
from calculator.estimator.training.dtypes import FP32, TrainingDtypes
from calculator.estimator.weights import WeightBytes, weight_bytes


@dataclass(frozen=True)
class Trainable:
    """What the optimizer updates: the adapters under LoRA, else every parameter."""

    params: int
    local: float
    """Per tensor-parallel rank."""
    adapters: int
    targets: frozenset[str]
    rank: int


@dataclass(frozen=True)
class ModelStates:
    """The whole model's persistent tensors on one GPU, before a pipeline stage takes its share."""

    weights: float
    working_copies: float
    """16-bit copies of fp32 weights that forward and backward run on (autocast, or gathered)."""
    gathered: float
    """ZeRO-3 / FSDP: the full parameters of the current and the prefetched layer."""
    master: float
    master_in_optimizer: bool
    """DeepSpeed's fp32 partition belongs to the optimizer; mixed precision's fp32 weights are
    the parameters themselves."""
    quantization_overhead: int
    adapters: float
    gradients: float
    step_gradients: float
    """The gradients the optimizer step reads (fp32 after DeepSpeed's conversion)."""
    tied_embedding_gradient: float
    optimizer_states: float
    step_temporaries: float
    trainable_in_layers: bool
    """LoRA: trainable tensors sit in the layers, so a stage holds them by its layer count."""


def base_weights(
    request: EstimateRequest, arch: Architecture, plan: Plan, dtypes: TrainingDtypes, notes: Notes
) -> tuple[WeightBytes, int | None]:
    """The frozen or trained base model's weights, and the checkpoint's stored bytes when they are
    the weights: LoRA on a pre-quantized checkpoint (PEFT over AWQ, GPTQ, FP8 layers) freezes
    the tensors the files store, as inference loads them; QLoRA quantizes a full-precision
    checkpoint."""
    stored = checkpoint_weight_bytes(request) if request.mode == "lora" else None
    base = weight_bytes(
        arch,
        weight_format=dtypes.loading.weight_format,
        other_bytes=dtypes.loading.other_bytes,
        plan=plan,
        stored_bytes=stored,
    )
    if stored is not None:
        note_checkpoint_bytes(notes, request, stored, plan)
    return base, stored


def trainable_params(
    request: EstimateRequest, arch: Architecture, plan: Plan, dtypes: TrainingDtypes
) -> Trainable:
    """LoRA adapters ``r · (in + out)`` per adapted linear (``lora.adapter_params``)."""
    lora = dtypes.lora
    targets = resolve_targets(arch, request.lora.targets) if lora else frozenset()
    adapters = adapter_params(arch, rank=request.lora.rank, targets=targets) if lora else 0
    trainable = adapters if lora else arch.params_total
    return Trainable(
        params=trainable,
        local=trainable / plan.tp,
        adapters=adapters,
        targets=targets,
        rank=request.lora.rank if lora else 0,
    )


def gradient_bytes(trainable: Trainable, plan: Plan, dtypes: TrainingDtypes, notes: Notes) -> float:
    """One gradient per trainable parameter in its dtype, ZeRO-2 sharded; DDP's buckets hold a
    second copy."""
    gradients = trainable.local * dtypes.trainable_bytes / plan.gradient_shards
    if plan.shard_group > 1 and plan.zero_stage == 0:
        gradients *= 2
        notes.add(
            gettext_noop(
                "Data parallel (DDP): gradient buckets double the gradient memory "
                "(gradient_as_bucket_view=False, the default)."
            ),
            gettext_noop("PyTorch DistributedDataParallel docs, gradient_as_bucket_view"),
        )
    return gradients


def optimizer_state_bytes(
    request: EstimateRequest,
    arch: Architecture,
    plan: Plan,
    trainable: Trainable,
    profile: OptimizerProfile,
) -> float:
    """The optimizer's states (``optimizer.optimizer_profile``), ZeRO-1 sharded; Adafactor's
    factored statistics per matrix (``optimizer.adafactor_state_elements``)."""
    lora = request.mode in {"lora", "qlora"}
    if request.optimizer == "adafactor":
        shapes = [
            (d_in, d_out, copies * count)
            for index, count in arch.layer_kinds
            for name, (d_in, d_out, copies) in module_shapes(arch, index).items()
            if (name in trainable.targets if lora else copies)
        ]
        matrix_elements = sum(c * i * o for i, o, c in shapes)
        state_elements = adafactor_state_elements(
            shapes, max(0, trainable.params - matrix_elements)
        )
        return state_elements * FP32 / plan.tp / plan.optimizer_shards
    state_bytes = trainable.local * profile.state_bytes_per_param
    if profile.small_tensor_state_bytes is not None and not lora:
        small = _small_tensor_params(arch)
        state_bytes += small * (profile.small_tensor_state_bytes - profile.state_bytes_per_param)
    return state_bytes / plan.optimizer_shards


def step_temporary_bytes(
    arch: Architecture,
    plan: Plan,
    trainable: Trainable,
    dtypes: TrainingDtypes,
    profile: OptimizerProfile,
) -> float:
    """What the optimizer step allocates beside its states (``optimizer.adam_step_temporaries``):
    state-sized copies, and copies of the largest tensor for per-tensor loops."""
    largest = _largest_trainable_tensor(arch, lora=dtypes.lora, rank=trainable.rank, plan=plan)
    return (
        trainable.local * dtypes.state_bytes * profile.step_temp_fraction / plan.optimizer_shards
        + largest * dtypes.trainable_bytes * profile.step_temp_largest_tensors
    )


STEP_NOTES = {
    "fused": gettext_noop(
        "%(optimizer)s states for %(trainable)s trainable parameters; the fused step "
        "updates in place and needs no temporaries."
    ),
    "foreach": gettext_noop(
        "%(optimizer)s states for %(trainable)s trainable parameters; the foreach step "
        "holds one more state-sized temporary (the square root of the second moment)."
    ),
    "for_loop": gettext_noop(
        "%(optimizer)s states for %(trainable)s trainable parameters; the for-loop step "
        "holds temporaries of about three of the largest parameter tensor."
    ),
}


def note_optimizer(
    request: EstimateRequest,
    switches: StackSwitches,
    profile: OptimizerProfile,
    trainable: Trainable,
    notes: Notes,
) -> None:
    if request.optimizer == "adamw":
        step_note = STEP_NOTES[switches.optimizer_impl]
    else:
        step_note = gettext_noop("%(optimizer)s states for %(trainable)s trainable parameters.")
    notes.add(step_note, profile.source, optimizer=profile.label, trainable=f"{trainable.params:,}")
    if profile.paged:
        notes.add(
            gettext_noop(
                "Paged optimizer: its states are in CUDA unified memory, counted here on the GPU; "
                "under memory pressure the driver moves them to CPU RAM page by page (slower)."
            ),
            profile.source,
        )


def resident_weights(
    arch: Architecture, plan: Plan, base: WeightBytes, dtypes: TrainingDtypes
) -> tuple[float, float, float]:
    """(weights, working copies, master weights) that forward and backward find on the GPU.

    The fp32 master weights are part of the optimizer state ZeRO-1 already partitions
    (Rajbhandari et al. 2020, arXiv:1910.02054 §5.1: K = 12 bytes of master, momentum and
    variance per parameter; Megatron's distributed optimizer likewise, Megatron-LM#654).
    """
    if not dtypes.fp32_master:
        return float(base.data), 0.0, 0.0
    # base.data is already this GPU's ZeRO-3 shard: undo it before the optimizer's split.
    master = base.data * plan.parameter_shards / plan.optimizer_shards
    p = dtypes.act_bytes
    working_copies = min(arch.linear_params, arch.params_total) / plan.tp * p
    if plan.zero_stage == 3:
        working_copies = 2 * arch.largest_layer_params / plan.tp * p
    return 0.0, working_copies, master


def fp32_partition(
    trainable: Trainable,
    plan: Plan,
    dtypes: TrainingDtypes,
    stack: Stack,
    gradients: float,
    notes: Notes,
) -> tuple[float, float]:
    """DeepSpeed with 16-bit weights (``Stack.fp32_optimizer_partitions``): (fp32 master
    partition, the step's gradients, converted to fp32 for the update)."""
    master = fp32_master_bytes(trainable.local, plan.optimizer_shards)
    # The rank's 16-bit gradient partition becomes fp32 for the update.
    step_gradients = (
        gradients
        - trainable.local * dtypes.trainable_bytes / plan.optimizer_shards
        + fp32_gradient_bytes(trainable.local, plan.optimizer_shards)
    )
    notes.add(
        gettext_noop(
            "%(stack)s with 16-bit weights: fp32 master weights and fp32 optimizer states, "
            "%(shards)s-way partitioned (12 bytes per parameter for Adam); the gradients "
            "are converted to fp32 for the step."
        ),
        "Rajbhandari et al. 2020 (arXiv:1910.02054) §5.1; " + DEEPSPEED_MEMORY_DOCS,
        stack=stack.label,
        shards=plan.optimizer_shards,
    )
    return master, step_gradients


def gathered_layers(
    arch: Architecture, plan: Plan, dtypes: TrainingDtypes, switches: StackSwitches, notes: Notes
) -> float:
    """ZeRO-3 / FSDP (or parameter offload): the gathered full parameters of the current and the
    prefetched layer (Rajbhandari et al. 2020, arXiv:1910.02054 §5.3; FSDP forward_prefetch)."""
    if not (plan.zero_stage == 3 or switches.parameter_offload):
        return 0.0
    notes.add(
        gettext_noop(
            "ZeRO-3/FSDP: each GPU holds 1/N of the parameters plus the gathered full parameters of "
            "the current and the prefetched layer."
        ),
        gettext_noop(
            "Rajbhandari et al. 2020 (arXiv:1910.02054) §5.3; PyTorch FSDP docs (forward_prefetch)"
        ),
    )
    return 2 * arch.largest_layer_params / plan.tp * dtypes.working_bytes


def tied_embedding_gradient(arch: Architecture, plan: Plan, dtypes: TrainingDtypes) -> float:
    """A tied embedding's backward materialises a full vocabulary × hidden gradient before it is
    added to the one the LM head already left in .grad (embedding_dense_backward, then
    AccumulateGrad); untied embeddings write theirs straight into .grad."""
    if arch.tie_word_embeddings and not dtypes.lora:
        return arch.embedding_params / plan.tp * dtypes.trainable_bytes
    return 0.0


def model_states(
    request: EstimateRequest,
    arch: Architecture,
    plan: Plan,
    *,
    dtypes: TrainingDtypes,
    switches: StackSwitches,
    stack: Stack,
    base: WeightBytes,
    trainable: Trainable,
    notes: Notes,
) -> ModelStates:
    """Every persistent tensor group of the model on one GPU, each from its function above."""
    gradients = gradient_bytes(trainable, plan, dtypes, notes)
    profile = optimizer_profile(request.optimizer, dtypes.state_bytes, switches.optimizer_impl)
    states = optimizer_state_bytes(request, arch, plan, trainable, profile)
    temporaries = step_temporary_bytes(arch, plan, trainable, dtypes, profile)
    note_optimizer(request, switches, profile, trainable, notes)
    weights, working_copies, master = resident_weights(arch, plan, base, dtypes)
    step_gradients = gradients
    if dtypes.fp32_partitions:
        master, step_gradients = fp32_partition(trainable, plan, dtypes, stack, gradients, notes)
    gathered = gathered_layers(arch, plan, dtypes, switches, notes)
    if (plan.zero_stage == 3 or switches.parameter_offload) and dtypes.fp32_master:
        # Under mixed precision the gathered 16-bit layers are the working copies.
        working_copies, gathered = gathered, 0.0
    return ModelStates(
        weights=weights,
        working_copies=working_copies,
        gathered=gathered,
        master=master,
        master_in_optimizer=dtypes.fp32_partitions,
        quantization_overhead=base.quantization_overhead,
        adapters=trainable.adapters / plan.tp * dtypes.adapter_bytes,
        gradients=gradients,
        step_gradients=step_gradients,
        tied_embedding_gradient=tied_embedding_gradient(arch, plan, dtypes),
        optimizer_states=states,
        step_temporaries=temporaries,
        trainable_in_layers=dtypes.lora,
    )


def _small_tensor_params(arch: Architecture) -> int:
    """Parameters in tensors under bitsandbytes' ``min_8bit_size`` (4096 elements): the norm
    weights when the hidden size is below it."""
    if arch.hidden_size >= BNB_MIN_8BIT_SIZE:
        return 0
    norms = arch.num_layers * (arch.pre_norms_per_layer + arch.post_norms_per_layer)
    return (norms + (1 if arch.final_norm else 0)) * arch.hidden_size


def _largest_trainable_tensor(arch: Architecture, *, lora: bool, rank: int, plan: Plan) -> float:
    """Elements of the largest trainable tensor on one GPU (for per-tensor optimizer loops)."""
    if lora:
        return rank * max(arch.hidden_size, arch.intermediate_size, arch.moe_intermediate_size)
    width = arch.embedding_width or arch.hidden_size
    inner = max(arch.intermediate_size, arch.moe_intermediate_size)
    return max(arch.vocab_size * width, arch.hidden_size * inner) / plan.tp

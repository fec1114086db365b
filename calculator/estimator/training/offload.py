"""The offload switches: what moves to CPU RAM, and what the GPU keeps of it."""

from __future__ import annotations

from dataclasses import replace

from calculator.estimator.architecture import Architecture
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import Plan
from calculator.estimator.schemas import EstimateRequest, HostBreakdown, StackSwitches
from calculator.estimator.stacks import Stack
from calculator.estimator.training.dtypes import FP32, TrainingDtypes
from calculator.estimator.training.states import ModelStates, Trainable


def _optimizer_on_host(
    request: EstimateRequest,
    plan: Plan,
    trainable: Trainable,
    dtypes: TrainingDtypes,
    states: ModelStates,
    stack: Stack,
    notes: Notes,
) -> dict[str, int]:
    """ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840 §4.1) keeps the 16-bit parameters on the
    GPU and moves the 16-bit gradients, the fp32 master parameters and both fp32 Adam moments to
    the CPU, where DeepSpeedCPUAdam runs the step; each data-parallel rank keeps its 1/N
    partition. DeepSpeed holds those gradients in fp32 (16 bytes per parameter with the master
    weights and moments, its memory docs' ZeRO-3 CPU formula)."""
    shards = max(plan.optimizer_shards, plan.gradient_shards)
    cpu_states = trainable.local * 2 * FP32 / plan.optimizer_shards
    if request.optimizer != "adamw":
        cpu_states = states.optimizer_states
    trainable_bytes = dtypes.trainable_bytes
    cpu_master = (
        states.master
        if states.master
        else (trainable.local * FP32 / plan.optimizer_shards if trainable_bytes != FP32 else 0)
    )
    gradient_bytes = FP32 if dtypes.fp32_partitions else trainable_bytes
    cpu_grads = trainable.local * gradient_bytes / shards
    notes.add(
        gettext_noop(
            "Optimizer offload: fp32 master weights, optimizer states and gradients in CPU "
            "RAM (%(gib)s GiB per GPU); the step runs on the CPU."
        ),
        gettext_noop("Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840) §4.1") + "; " + stack.source,
        gib=round((cpu_states + cpu_master + cpu_grads) / 2**30, 2),
    )
    return {
        "optimizer_states": int(cpu_states),
        "master_weights": int(cpu_master),
        "gradients": int(cpu_grads),
    }


def _parameters_on_host(plan: Plan, states: ModelStates, notes: Notes) -> dict[str, int]:
    """This GPU's parameter shard in CPU RAM (DeepSpeed ZeRO-3 ``offload_param``, FSDP2's
    ``CPUOffloadPolicy``). DeepSpeed's offload_param moves the 16-bit partition; its master stays
    the optimizer's."""
    weights = states.weights + (0.0 if states.master_in_optimizer else states.master)
    cpu_params = weights / max(1, plan.shard_group if plan.zero_stage < 3 else 1)
    notes.add(
        gettext_noop(
            "Parameter offload: this GPU's parameter shard waits in CPU RAM and each layer is "
            "fetched when it runs."
        ),
        gettext_noop("DeepSpeed ZeRO-3 offload_param; PyTorch FSDP2 CPUOffloadPolicy"),
    )
    return {"parameters": int(cpu_params)}


def host_offload(
    request: EstimateRequest,
    switches: StackSwitches,
    stack: Stack,
    *,
    plan: Plan,
    trainable: Trainable,
    dtypes: TrainingDtypes,
    states: ModelStates,
    notes: Notes,
) -> HostBreakdown:
    """CPU RAM per GPU process for offloaded optimizer states and parameters (page-locked when
    the stack pins its host copies). FSDP2's ``CPUOffloadPolicy`` keeps sharded parameters,
    gradients and the optimizer on the CPU."""
    host = HostBreakdown()
    if switches.optimizer_offload:
        moved = _optimizer_on_host(request, plan, trainable, dtypes, states, stack, notes)
        host = host.model_copy(update=moved)
    if switches.parameter_offload and not dtypes.lora:
        host = host.model_copy(update=_parameters_on_host(plan, states, notes))
    if stack.pinned_host_memory:
        host = host.model_copy(update={"pinned": host.total()})
    return host


def left_on_gpu(
    states: ModelStates,
    switches: StackSwitches,
    arch: Architecture,
    plan: Plan,
    dtypes: TrainingDtypes,
) -> ModelStates:
    """What the GPU still holds once the offload switches have moved their tensors."""
    if switches.optimizer_offload:
        # Gradients leave the GPU bucket by bucket as they are reduced (ZeRO-Offload §4.1).
        bucket = 2 * arch.largest_layer_params / plan.tp * dtypes.trainable_bytes
        gradients = min(states.gradients, bucket)
        states = replace(
            states,
            optimizer_states=0.0,
            step_temporaries=0.0,
            master=0.0,
            gradients=gradients,
            step_gradients=gradients,
        )
    if switches.parameter_offload and not dtypes.lora:
        states = replace(
            states, weights=0.0, master=states.master if dtypes.fp32_partitions else 0.0
        )
    return states


def with_offloaded_activations(
    host: HostBreakdown, host_activations: float, stack: Stack, notes: Notes
) -> HostBreakdown:
    """Activation offloading (Unsloth's offloaded checkpointer, torchtune's and TRL's
    activation offloading): the checkpointed activations wait in CPU RAM."""
    pinned = int(host_activations) if stack.pinned_host_memory else 0
    notes.add(
        gettext_noop(
            "Activation offloading: the checkpointed activations (%(gib)s GiB) wait in CPU "
            "RAM; the GPU keeps the layers being copied out and brought back."
        ),
        stack.source,
        gib=round(host_activations / 2**30, 2),
    )
    return host.model_copy(
        update={"activations": int(host_activations), "pinned": host.pinned + pinned}
    )

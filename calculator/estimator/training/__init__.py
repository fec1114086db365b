"""Training memory per GPU, as a timeline of one step's phases.

A training step runs forward to the loss, backward from the loss's gradient (recomputing
checkpointed layers) and the optimizer step. Each phase lists the tensor groups alive in it, in
the categories of PyTorch's MemTracker (parameters, gradients, optimizer states, activations,
temporaries); the estimate is the largest phase. The training stack (``stacks.STACKS``) is a
table of switches; each switch picks and parameterises the small functions of these modules:

- ``dtypes``: the element sizes the mode, precision and stack train in;
- ``states``: parameters, gradients and optimizer states of the whole model on one GPU;
- ``offload``: what the offload switches move to CPU RAM, and what the GPU keeps;
- ``saved``: activations kept for backward, recomputation, and the loss's logits;
- ``pipeline``: pipeline stages, and the stages that can peak;
- ``timeline``: a stage's tensor groups, its phases, and the peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.architecture import Architecture
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import Plan
from calculator.estimator.result import transformers_result
from calculator.estimator.schemas import (
    EstimateRequest,
    EstimateResult,
    HostBreakdown,
    StackSwitches,
)
from calculator.estimator.stacks import STACKS, SWITCH_NAMES, Stack, resolve_switches
from calculator.estimator.training.dtypes import TrainingDtypes, training_dtypes
from calculator.estimator.training.offload import (
    host_offload,
    left_on_gpu,
    with_offloaded_activations,
)
from calculator.estimator.training.pipeline import Stage, peaking_stages, pipeline_stages
from calculator.estimator.training.saved import SavedActivations, saved_activations
from calculator.estimator.training.states import (
    ModelStates,
    base_weights,
    model_states,
    trainable_params,
)
from calculator.estimator.training.timeline import (
    Timeline,
    peak_of,
    stage_activations,
    stage_groups,
    stage_timeline,
)

__all__ = ["estimate_training", "pipeline_stages"]


@dataclass(frozen=True)
class _Step:
    """Everything one step of one run holds, before the stages take their shares."""

    states: ModelStates
    saved: SavedActivations
    host: HostBreakdown
    stages: list[Stage]
    trainable: int
    checkpoint_bytes: int | None


def _note_stack(
    request: EstimateRequest, stack: Stack, switches: StackSwitches, notes: Notes
) -> None:
    if request.training_stack != "hf_trainer":
        notes.add(
            gettext_noop("Training stack: %(stack)s, with its defaults for %(switches)s."),
            stack.source,
            stack=stack.label,
            # English names joined by ", ": the page translates them one by one.
            switches=", ".join(SWITCH_NAMES[name] for name in switches.from_stack) or "-",
        )


def _step(
    request: EstimateRequest,
    arch: Architecture,
    plan: Plan,
    *,
    stack: Stack,
    switches: StackSwitches,
    dtypes: TrainingDtypes,
    notes: Notes,
) -> _Step:
    base, stored = base_weights(request, arch, plan, dtypes, notes)
    trainable = trainable_params(request, arch, plan, dtypes)
    states = model_states(
        request,
        arch,
        plan,
        dtypes=dtypes,
        switches=switches,
        stack=stack,
        base=base,
        trainable=trainable,
        notes=notes,
    )
    host = host_offload(
        request,
        switches,
        stack,
        plan=plan,
        trainable=trainable,
        dtypes=dtypes,
        states=states,
        notes=notes,
    )
    saved = saved_activations(
        request,
        arch,
        plan,
        dtypes=dtypes,
        switches=switches,
        stack=stack,
        trainable=trainable,
        notes=notes,
    )
    return _Step(
        states=left_on_gpu(states, switches, arch, plan, dtypes),
        saved=saved,
        host=host,
        stages=peaking_stages(request, arch, plan, notes),
        trainable=trainable.params,
        checkpoint_bytes=stored,
    )


def _backward_head_copy(
    arch: Architecture, plan: Plan, dtypes: TrainingDtypes, switches: StackSwitches
) -> float | None:
    """Autocast with full checkpointing: backward re-casts one layer at a time and keeps only
    the LM head's copy (``timeline.StageGroups.head_copy``)."""
    if (
        dtypes.loading.autocast
        and switches.activation_checkpointing == "full"
        and not dtypes.lora
        and plan.zero_stage != 3
    ):
        return arch.lm_head_params / plan.tp * dtypes.act_bytes
    return None


def _timelines(
    step: _Step, arch: Architecture, plan: Plan, stack: Stack, head_copy: float | None
) -> list[Timeline]:
    return [
        stage_timeline(
            stage_groups(
                stage,
                states=step.states,
                saved=step.saved,
                arch=arch,
                plan=plan,
                resident_gradients=stack.resident_gradients,
                backward_head_copy=head_copy,
            ),
            stage,
        )
        for stage in step.stages
    ]


def estimate_training(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes
) -> EstimateResult:
    """Per-GPU memory of a training step: the largest phase of the stage that peaks."""
    switches = resolve_switches(request)
    stack = STACKS[request.training_stack]
    _note_stack(request, stack, switches, notes)
    dtypes = training_dtypes(request, stack, notes)
    step = _step(request, arch, plan, stack=stack, switches=switches, dtypes=dtypes, notes=notes)
    head_copy = _backward_head_copy(arch, plan, dtypes, switches)
    timeline, phase = peak_of(_timelines(step, arch, plan, stack, head_copy))
    host = step.host
    if step.saved.offloaded:
        offloaded = max([0.0, *(stage_activations(step.saved, s, arch)[1] for s in step.stages)])
        host = with_offloaded_activations(host, offloaded, stack, notes)
    result = transformers_result(
        request,
        arch,
        phase.breakdown(),
        phase=phase.name,
        trainable=int(step.trainable),
        notes=notes,
        training=True,
    )
    return result.model_copy(
        update={
            "host_bytes": host.total(),
            "host_breakdown": host,
            "switches": switches,
            "peak_stage": timeline.stage if plan.pp > 1 else None,
            "checkpoint_weight_bytes": step.checkpoint_bytes,
        }
    )

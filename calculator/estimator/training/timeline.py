"""One training step as a timeline: the phases a GPU goes through, each a list of the tensor
groups alive in it, named in the categories of PyTorch's MemTracker
(``torch/distributed/_tools/mem_tracker.py``: parameters, gradients, optimizer states,
activations, temporaries). The peak is the largest phase."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from calculator.estimator.architecture import Architecture
from calculator.estimator.loss import LossBytes
from calculator.estimator.parallelism import Plan
from calculator.estimator.schemas import Breakdown
from calculator.estimator.training.pipeline import Stage
from calculator.estimator.training.saved import SavedActivations
from calculator.estimator.training.states import ModelStates

Category = Literal["parameters", "gradients", "optimizer states", "activations", "temporaries"]
Field = Literal[
    "weights",
    "activations",
    "logits",
    "gradients",
    "optimizer_states",
    "master_weights",
    "adapters",
    "quantization_overhead",
]


@dataclass(frozen=True)
class TensorGroup:
    name: str
    category: Category
    shown_as: Field
    """The ``Breakdown`` field the page shows it in."""
    bytes: float


@dataclass(frozen=True)
class Phase:
    name: str
    groups: tuple[TensorGroup, ...]

    def breakdown(self) -> Breakdown:
        """Bytes per ``Breakdown`` field: each field's groups summed in order, then rounded down."""
        return self._breakdown

    @cached_property
    def _breakdown(self) -> Breakdown:
        # Built once: the peak search asks every phase for its total, and the winner again.
        totals: dict[str, float] = {}
        for group in self.groups:
            totals[group.shown_as] = totals.get(group.shown_as, 0) + group.bytes
        return Breakdown.model_validate({name: int(value) for name, value in totals.items()})

    def total(self) -> int:
        return self._total

    @cached_property
    def _total(self) -> int:
        return self._breakdown.total()


@dataclass(frozen=True)
class Timeline:
    stage: int
    phases: tuple[Phase, ...]

    def peak(self) -> Phase:
        """The largest phase; the earliest of equals."""
        return max(self.phases, key=Phase.total)


def peak_of(timelines: list[Timeline]) -> tuple[Timeline, Phase]:
    """The stage whose largest phase is the largest (the first of equals), and that phase."""
    timeline = max(timelines, key=lambda t: t.peak().total())
    return timeline, timeline.peak()


def stage_activations(
    saved: SavedActivations, stage: Stage, arch: Architecture
) -> tuple[float, float]:
    """(On the GPU, in CPU RAM) of what the stage's micro-batches in flight keep for backward.
    With activation offloading the layer being offloaded and the one being brought back stay on
    the GPU."""
    kept_layers = saved.layers * (stage.layers / arch.num_layers)
    model_level = saved.model_level if stage.last else 0.0
    kept = stage.in_flight * kept_layers + model_level
    if not saved.offloaded:
        return kept, 0.0
    host = kept - model_level
    return min(2, stage.layers) * (kept_layers / max(1, stage.layers)) + model_level, host


@dataclass(frozen=True)
class StageGroups:
    """One stage's tensor groups, each at the stage's share of the model."""

    weights: TensorGroup
    working_copies: TensorGroup
    gathered: TensorGroup
    head_copy: TensorGroup | None
    """Autocast's cache of cast weights is dropped when the autocast region ends; with
    checkpointing nothing inside a layer keeps them, so backward (which re-casts one layer at a
    time) holds only the LM head's copy, saved outside the layers (None: backward holds the
    forward's copies)."""
    persistent: tuple[TensorGroup, ...]
    """What lives from one step to the next, besides weights and optimizer states."""
    optimizer_states: TensorGroup
    step_temporaries: TensorGroup
    gradients: TensorGroup
    step_gradients: TensorGroup
    early_gradients: tuple[TensorGroup, ...]
    """Gradients already there in forward: of earlier micro-batches, or a resident buffer."""
    tied_embedding_gradient: TensorGroup
    activations: TensorGroup
    recompute: TensorGroup | None
    backward_working: TensorGroup
    logits: TensorGroup
    loss_gradient: TensorGroup

    @property
    def forward_weights(self) -> tuple[TensorGroup, ...]:
        return (self.weights, self.working_copies, self.gathered)

    @property
    def backward_weights(self) -> tuple[TensorGroup, ...]:
        if self.head_copy is None:
            return self.forward_weights
        return (self.weights, self.gathered, self.head_copy)


def _persistent(states: ModelStates, share: float, layer_share: float) -> tuple[TensorGroup, ...]:
    master: Category = "optimizer states" if states.master_in_optimizer else "parameters"
    overhead = states.quantization_overhead * share
    return (
        TensorGroup("fp32 master weights", master, "master_weights", states.master * share),
        TensorGroup("LoRA adapters", "parameters", "adapters", states.adapters * layer_share),
        TensorGroup("quantization scales", "parameters", "quantization_overhead", overhead),
    )


def _weights(
    states: ModelStates, stage: Stage, share: float, backward_head_copy: float | None
) -> tuple[TensorGroup, TensorGroup, TensorGroup, TensorGroup | None]:
    head = None
    if backward_head_copy is not None:
        head_bytes = backward_head_copy if stage.last else 0.0
        head = TensorGroup("LM head copy", "parameters", "weights", head_bytes)
    return (
        TensorGroup("weights", "parameters", "weights", states.weights * share),
        TensorGroup(
            "16-bit working copies", "parameters", "weights", states.working_copies * share
        ),
        TensorGroup("gathered layers", "parameters", "weights", states.gathered),
        head,
    )


def stage_groups(
    stage: Stage,
    *,
    states: ModelStates,
    saved: SavedActivations,
    arch: Architecture,
    plan: Plan,
    resident_gradients: bool,
    backward_head_copy: float | None,
) -> StageGroups:
    """The stage's share of every tensor group: parameters by its share of the model, LoRA's
    trainable tensors by its layers, activations by its layers and micro-batches in flight."""
    share = stage.param_share
    layer_share = stage.layers / arch.num_layers
    per_trainable = layer_share if states.trainable_in_layers else share
    weights, copies, gathered, head = _weights(states, stage, share, backward_head_copy)
    gradients = TensorGroup("gradients", "gradients", "gradients", states.gradients * per_trainable)
    # With several micro-batches in flight, gradients of earlier ones already exist.
    early = stage.in_flight > 1 or plan.pp > 1 or resident_gradients
    tied = states.tied_embedding_gradient if stage.index == 0 else 0.0
    kept, _host = stage_activations(saved, stage, arch)
    loss = saved.loss if stage.last else LossBytes(forward=0.0, backward=0.0)
    return StageGroups(
        weights=weights,
        working_copies=copies,
        gathered=gathered,
        head_copy=head,
        persistent=_persistent(states, share, layer_share),
        optimizer_states=TensorGroup(
            "optimizer states",
            "optimizer states",
            "optimizer_states",
            states.optimizer_states * per_trainable,
        ),
        step_temporaries=TensorGroup(
            "step temporaries",
            "temporaries",
            "optimizer_states",
            states.step_temporaries * per_trainable,
        ),
        gradients=gradients,
        step_gradients=TensorGroup(
            "gradients", "gradients", "gradients", states.step_gradients * per_trainable
        ),
        early_gradients=(gradients,) if early else (),
        tied_embedding_gradient=TensorGroup(
            "tied embedding gradient", "temporaries", "gradients", tied
        ),
        activations=TensorGroup("saved activations", "activations", "activations", kept),
        recompute=(
            TensorGroup("recomputed layer", "activations", "activations", saved.recompute)
            if saved.recompute
            else None
        ),
        backward_working=TensorGroup("layer backward", "temporaries", "activations", saved.working),
        logits=TensorGroup("logits and loss", "activations", "logits", loss.forward),
        loss_gradient=TensorGroup("loss gradient", "temporaries", "logits", loss.backward),
    )


def _forward(g: StageGroups) -> Phase | None:
    held = (g.activations, g.logits, *g.early_gradients, g.optimizer_states, *g.persistent)
    return Phase("forward (loss)", (*g.forward_weights, *held))


def _backward_start(g: StageGroups) -> Phase | None:
    held = (g.activations, g.loss_gradient, *g.early_gradients, g.optimizer_states, *g.persistent)
    return Phase("backward (start)", (*g.backward_weights, *held))


def _backward_recompute(g: StageGroups) -> Phase | None:
    """With checkpointing the last layer is recomputed only once the loss's gradient has been
    reduced to the hidden states: the logit-sized tensors are gone by then."""
    if g.recompute is None:
        return None
    activations = (g.activations, g.recompute, g.backward_working)
    held = (*activations, *g.early_gradients, g.optimizer_states, *g.persistent)
    return Phase("backward (recompute)", (*g.backward_weights, *held))


def _backward_end(g: StageGroups) -> Phase | None:
    """The saved activations are freed; the last layer's backward runs; every gradient exists."""
    activations = (g.backward_working, *((g.recompute,) if g.recompute is not None else ()))
    gradients = (g.gradients, g.tied_embedding_gradient)
    held = (*activations, *gradients, g.optimizer_states, *g.persistent)
    return Phase("backward (end)", (g.weights, g.gathered, *held))


def _optimizer_step(g: StageGroups) -> Phase | None:
    held = (g.step_gradients, g.optimizer_states, g.step_temporaries, *g.persistent)
    return Phase("optimizer step", (g.weights, *held))


PHASES = (_forward, _backward_start, _backward_recompute, _backward_end, _optimizer_step)
"""A training step, in order; a phase that does not happen (no recomputation) is None."""


def stage_timeline(groups: StageGroups, stage: Stage) -> Timeline:
    """Forward to the loss, backward from the loss's gradient (recomputing checkpointed layers)
    to the first layer, then the optimizer step, for one pipeline stage."""
    phases = tuple(phase for build in PHASES if (phase := build(groups)) is not None)
    return Timeline(stage=stage.index, phases=phases)

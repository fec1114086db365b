"""The training step as a timeline of phases, each a list of tensor groups.

Expected numbers are sums of the made-up group sizes below, worked out by hand.
"""

from calculator.estimator.architecture import Architecture
from calculator.estimator.loss import LossBytes
from calculator.estimator.parallelism import plan_for
from calculator.estimator.training.pipeline import Stage
from calculator.estimator.training.saved import SavedActivations
from calculator.estimator.training.states import ModelStates
from calculator.estimator.training.timeline import (
    Phase,
    TensorGroup,
    Timeline,
    peak_of,
    stage_groups,
    stage_timeline,
)

CATEGORIES = {"parameters", "gradients", "optimizer states", "activations", "temporaries"}
ARCH = Architecture(
    model_type="custom",
    vocab_size=1000,
    hidden_size=64,
    num_layers=4,
    num_attention_heads=4,
    num_kv_heads=4,
    head_dim=16,
    v_head_dim=16,
    intermediate_size=256,
)
STATES = ModelStates(
    weights=1000.0,
    working_copies=0.0,
    gathered=0.0,
    master=0.0,
    master_in_optimizer=False,
    quantization_overhead=0,
    adapters=0.0,
    gradients=1000.0,
    step_gradients=1000.0,
    tied_embedding_gradient=0.0,
    optimizer_states=2000.0,
    step_temporaries=500.0,
    trainable_in_layers=False,
)
ONE_STAGE = Stage(index=0, layers=4, in_flight=1, param_share=1.0, last=True)


def saved(recompute: float) -> SavedActivations:
    return SavedActivations(
        layers=400.0,
        model_level=10.0,
        recompute=recompute,
        working=50.0,
        loss=LossBytes(forward=300.0, backward=600.0),
        offloaded=False,
    )


def timeline(recompute: float) -> Timeline:
    groups = stage_groups(
        ONE_STAGE,
        states=STATES,
        saved=saved(recompute),
        arch=ARCH,
        plan=plan_for(num_gpus=1, tensor_parallel=1, zero_stage=0),
        resident_gradients=False,
        backward_head_copy=None,
    )
    return stage_timeline(groups, ONE_STAGE)


def test_a_step_runs_forward_backward_then_the_optimizer():
    names = [phase.name for phase in timeline(recompute=0.0).phases]
    assert names == ["forward (loss)", "backward (start)", "backward (end)", "optimizer step"]


def test_recomputation_is_a_phase_of_its_own_under_checkpointing():
    names = [phase.name for phase in timeline(recompute=80.0).phases]
    assert names[2] == "backward (recompute)"


def test_every_group_is_in_a_memtracker_category():
    for phase in timeline(recompute=80.0).phases:
        assert {group.category for group in phase.groups} <= CATEGORIES


def test_phases_hold_what_is_alive_then():
    phases = {phase.name: phase.breakdown() for phase in timeline(recompute=80.0).phases}
    # Forward: weights 1000 + activations 400 + 10 + logits 300 + states 2000 (no gradients yet).
    assert phases["forward (loss)"].total() == 3710
    # Backward starts with the loss's gradient (600) instead of the logits.
    assert phases["backward (start)"].total() == 4010
    # Recompute: saved 410, the recomputed layer 80 and its backward 50.
    assert phases["backward (recompute)"].activations == 540
    # End: gradients 1000, the last layer's backward 50 + 80.
    assert phases["backward (end)"].total() == 1000 + 130 + 1000 + 2000
    # Step: gradients, states and their temporaries 500, shown with the states.
    assert phases["optimizer step"].optimizer_states == 2500


def test_the_peak_is_the_largest_phase_and_the_earliest_of_equals():
    line = timeline(recompute=80.0)
    chosen, phase = peak_of([line])
    assert chosen is line
    # Step 1000 + 1000 + 2500 = 4500 > end 4130 > backward start 4010 > forward 3710.
    assert (phase.name, phase.total()) == ("optimizer step", 4500)
    group = TensorGroup("weights", "parameters", "weights", 10.0)
    equal = Timeline(stage=0, phases=(Phase("a", (group,)), Phase("b", (group,))))
    assert equal.peak().name == "a"


def test_a_field_rounds_down_once_after_its_groups_are_summed():
    half = TensorGroup("weights", "parameters", "weights", 0.5)
    assert Phase("x", (half, half)).breakdown().weights == 1

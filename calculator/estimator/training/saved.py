"""Activations: what autograd keeps for backward under each checkpointing switch, what backward
recomputes and works in, and the loss's logit-sized tensors under each loss switch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calculator.estimator import activations as act
from calculator.estimator.architecture import Architecture
from calculator.estimator.loss import (
    TORCHTUNE_OUTPUT_CHUNKS,
    LossBytes,
    chunked_loss_bytes,
    full_loss_bytes,
    fused_linear_loss_bytes,
)
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import Plan
from calculator.estimator.schemas import EstimateRequest, StackSwitches
from calculator.estimator.stacks import Stack
from calculator.estimator.training.dtypes import FP32, TrainingDtypes
from calculator.estimator.training.states import Trainable


@dataclass(frozen=True)
class SavedActivations:
    """One micro-batch's activations over the whole model."""

    layers: float
    """What every decoder layer keeps for backward, all layers together."""
    model_level: float
    """What the model keeps once, outside its layers (``activations.model_level_bytes``)."""
    recompute: float
    """One layer's activations, rebuilt in backward under full checkpointing (else 0)."""
    working: float
    """The gradients one layer's backward holds at once."""
    loss: LossBytes
    offloaded: bool


@dataclass(frozen=True)
class Checkpointing:
    keeps_inputs_only: bool
    note: str | None = None
    source: str = ""


CHECKPOINTING = {
    "none": Checkpointing(keeps_inputs_only=False),
    "full": Checkpointing(
        keeps_inputs_only=True,
        note=gettext_noop(
            "Gradient checkpointing keeps each layer's input and recomputes one layer at a time "
            "in backward."
        ),
        source=gettext_noop(
            "Chen et al. 2016 (arXiv:1604.06174); transformers gradient_checkpointing_enable()"
        ),
    ),
    "selective": Checkpointing(
        keeps_inputs_only=False,
        note=gettext_noop(
            "Selective recomputation: every layer keeps its activations except the attention "
            "scores, which backward recomputes."
        ),
        source=gettext_noop("Korthikanti et al. 2022 (arXiv:2205.05198) §4.2"),
    ),
}


def training_setting(
    request: EstimateRequest,
    arch: Architecture,
    plan: Plan,
    dtypes: TrainingDtypes,
    switches: StackSwitches,
    stack: Stack,
    trainable: Trainable,
) -> act.Setting:
    """What shapes a layer's activations in this run (``activations.Setting``)."""
    loading = dtypes.loading
    return act.Setting(
        batch=request.batch_size,
        seq=request.seq_len // plan.cp,
        act_bytes=loading.act_bytes,
        residual_bytes=loading.residual_bytes,
        autocast=loading.autocast,
        attention=(
            request.attention
            if stack.own_model_code
            else act.attention_that_runs(arch, request.attention)
        ),
        training=True,
        frozen_base=dtypes.lora,
        plan=plan,
        lora_targets=trainable.targets,
        lora_rank=trainable.rank,
        sequence_parallel=switches.sequence_parallel and plan.tp > 1,
        selective_recompute=switches.activation_checkpointing == "selective",
        adapter_bytes=dtypes.adapter_bytes,
        fused_gelu=stack.own_model_code,
        quantized_base=request.mode == "qlora",
        fused_layer_kernels=stack.fused_layer_kernels,
    )


def saved_activations(
    request: EstimateRequest,
    arch: Architecture,
    plan: Plan,
    *,
    dtypes: TrainingDtypes,
    switches: StackSwitches,
    stack: Stack,
    trainable: Trainable,
    notes: Notes,
) -> SavedActivations:
    """Per layer, every tensor backward needs (``activations.training_layer_bytes``), or only
    the layer's input under full checkpointing (``activations.checkpointed_layer_bytes``)."""
    setting = training_setting(request, arch, plan, dtypes, switches, stack, trainable)
    samples = act.layer_samples(arch)
    one_layer = max(act.training_layer_bytes(arch, setting, i) for i in samples)
    working = max(act.backward_layer_working_bytes(arch, setting, i) for i in samples)
    model_level = act.model_level_bytes(arch, setting)
    checkpointing = CHECKPOINTING[switches.activation_checkpointing]
    per_layer_kept = {
        index: (
            act.checkpointed_layer_bytes(arch, setting)
            if checkpointing.keeps_inputs_only
            else act.training_layer_bytes(arch, setting, index)
        )
        for index, _count in arch.layer_kinds
    }
    if checkpointing.note is not None:
        notes.add(checkpointing.note, checkpointing.source)
    if setting.sequence_parallel:
        notes.add(
            gettext_noop(
                "Sequence parallelism: norms, dropout and the residual stream are split across "
                "the %(tp)s tensor-parallel GPUs."
            ),
            gettext_noop("Korthikanti et al. 2022 (arXiv:2205.05198) §4.2.2"),
            tp=plan.tp,
        )
    loss = LOSSES[switches.loss](arch, plan, setting.tokens, dtypes, notes)
    return SavedActivations(
        layers=sum(count * per_layer_kept[index] for index, count in arch.layer_kinds),
        model_level=model_level,
        recompute=one_layer if checkpointing.keeps_inputs_only else 0.0,
        working=working,
        loss=loss,
        offloaded=switches.activation_offloading,
    )


def _full_loss(
    arch: Architecture, plan: Plan, tokens: int, dtypes: TrainingDtypes, notes: Notes
) -> LossBytes:
    notes.add(
        gettext_noop(
            "Loss over every position with logits upcast to fp32 (transformers ForCausalLMLoss); the "
            "backward of cross-entropy holds three fp32 logit-sized tensors at once."
        ),
        gettext_noop(
            "transformers loss_utils.ForCausalLMLoss; PyTorch log_softmax/nll_loss backward"
        ),
    )
    p = dtypes.act_bytes
    return full_loss_bytes(
        tokens=tokens,
        vocab=arch.vocab_size / plan.tp,
        logit_bytes=p,
        fp32_model=p == FP32 and not dtypes.loading.autocast,
        softcap=bool(arch.final_logit_softcapping),
    )


def _chunked_loss(
    arch: Architecture, plan: Plan, tokens: int, dtypes: TrainingDtypes, notes: Notes
) -> LossBytes:
    notes.add(
        gettext_noop(
            "Chunked loss: the LM head and the fp32 upcast run on %(chunks)s chunks of "
            "positions; the fp32 log-probabilities of all chunks stay saved for backward."
        ),
        gettext_noop("torchtune CEWithChunkedOutputLoss; LitGPT chunked_cross_entropy"),
        chunks=TORCHTUNE_OUTPUT_CHUNKS,
    )
    vocab_local = arch.vocab_size / plan.tp
    return chunked_loss_bytes(tokens=tokens, vocab=vocab_local, logit_bytes=dtypes.act_bytes)


def _fused_linear_loss(
    arch: Architecture, plan: Plan, tokens: int, dtypes: TrainingDtypes, notes: Notes
) -> LossBytes:
    notes.add(
        gettext_noop(
            "Fused linear cross-entropy: the LM head and the loss run chunk by chunk and the "
            "full logits never exist; the gradients of the hidden states are formed in forward."
        ),
        gettext_noop("Liger-Kernel ops/fused_linear_cross_entropy.py"),
    )
    head = (arch.lm_head_params or arch.embedding_params) / plan.tp
    return fused_linear_loss_bytes(
        tokens=tokens,
        vocab=arch.vocab_size / plan.tp,
        hidden=arch.hidden_size,
        act_bytes=dtypes.act_bytes,
        head_params_local=head,
        head_trainable=not dtypes.lora,
        param_bytes=dtypes.param_bytes,
    )


LOSSES: dict[str, Callable[[Architecture, Plan, int, TrainingDtypes, Notes], LossBytes]] = {
    "full": _full_loss,
    "chunked": _chunked_loss,
    "fused_linear": _fused_linear_loss,
}
"""The loss switch: each implementation's logit-sized tensors (``loss`` module)."""

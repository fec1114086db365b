"""Pipeline and context parallelism: which layers, parameters and micro-batches a GPU holds."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.architecture import Architecture, ConfigError
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import Plan
from calculator.estimator.schemas import EstimateRequest


@dataclass(frozen=True)
class Stage:
    index: int
    layers: int
    in_flight: int
    param_share: float
    """This stage's parameters as a fraction of the model's."""
    last: bool


def pipeline_stages(arch: Architecture, plan: Plan, micro_batches: int | None) -> list[Stage]:
    """Layers, parameters and in-flight micro-batches of each pipeline stage.

    Layers are split evenly (the first stages take the remainder). Under 1F1B the first stage
    runs ``pp`` forward passes before its first backward, so stage ``k`` keeps
    ``min(pp - k, m)`` micro-batches of activations (Narayanan et al. 2021, arXiv:2104.04473
    §2.2.1). The first stage holds the embedding; the last the final norm and the LM head, and a
    second copy of a tied embedding (Megatron-LM keeps the word embeddings on both ends).
    """
    if plan.pp == 1:
        return [Stage(index=0, layers=arch.num_layers, in_flight=1, param_share=1.0, last=True)]
    total = arch.params_total
    layer_total = sum(count * arch.layer_params(index) for index, count in arch.layer_kinds)
    per_layer = layer_total / arch.num_layers
    head = arch.lm_head_params or arch.embedding_params
    rest = max(0, total - layer_total - arch.embedding_params - arch.lm_head_params)
    m = micro_batches or plan.pp
    base, extra = divmod(arch.num_layers, plan.pp)
    stages = []
    for k in range(plan.pp):
        layers = base + (1 if k < extra else 0)
        stage_params = layers * per_layer
        if k == 0:
            stage_params += arch.embedding_params
        if k == plan.pp - 1:
            stage_params += head + rest
        stages.append(
            Stage(
                index=k,
                layers=layers,
                in_flight=min(plan.pp - k, m),
                param_share=stage_params / total if total else 0.0,
                last=k == plan.pp - 1,
            )
        )
    return stages


def peaking_stages(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes
) -> list[Stage]:
    """The stages that can peak, with the notes on how pipeline and context parallelism split
    the model. A middle stage never peaks: the first has at least as many layers, more
    micro-batches in flight and the embedding; only the last holds the LM head and the loss."""
    if plan.pp > arch.num_layers:
        raise ConfigError(
            f"pipeline_parallel ({plan.pp}) exceeds the model's {arch.num_layers} layers",
            "pipeline_parallel",
        )
    stages = pipeline_stages(arch, plan, request.micro_batches)
    if plan.pp > 1:
        notes.add(
            gettext_noop(
                "Pipeline parallel, 1F1B schedule: stage k of %(stages)s keeps the activations of "
                "min(%(stages)s - k, micro-batches) micro-batches in flight; the first stage also "
                "holds the embedding, the last the LM head and the loss."
            ),
            gettext_noop(
                "Narayanan et al. 2021 (arXiv:2104.04473) §2.2.1; Korthikanti et al. 2022 "
                "(arXiv:2205.05198) §4.2.3"
            ),
            stages=plan.pp,
        )
    if plan.cp > 1:
        notes.add(
            gettext_noop(
                "Context parallel: each GPU holds %(tokens)s of the %(seq)s tokens of a sequence "
                "and their activations; keys and values of the other chunks pass through in turn."
            ),
            gettext_noop(
                "Megatron-LM context parallelism docs; Liu et al. 2023 (arXiv:2310.01889)"
            ),
            tokens=request.seq_len // plan.cp,
            seq=request.seq_len,
        )
    return stages if len(stages) < 3 else [stages[0], stages[-1]]

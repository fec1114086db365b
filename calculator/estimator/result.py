"""A transformers estimate's result: the peak of live tensors plus what no tensor accounts for."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.overheads import (
    CUDA_CONTEXT_SOURCE,
    RESERVE_SOURCE,
    allocator_reserve_bytes,
    cuda_context_bytes,
)
from calculator.estimator.schemas import Breakdown, EstimateRequest, EstimateResult, LayerKind


def transformers_result(
    request: EstimateRequest,
    arch: Architecture,
    peak_parts: Breakdown,
    *,
    phase: str,
    trainable: int,
    notes: Notes,
    training: bool,
    layer_kinds: list[LayerKind] | None = None,
) -> EstimateResult:
    """The peak phase's breakdown with the CUDA context and the caching allocator's reserve
    (``overheads``) added, and the notes that say so."""
    peak = peak_parts.total()
    context = cuda_context_bytes()
    reserve = allocator_reserve_bytes(peak, training=training)
    notes.add(
        gettext_noop("CUDA context and kernels: %(mib)s MiB per GPU."),
        CUDA_CONTEXT_SOURCE,
        mib=context // (1024 * 1024),
    )
    notes.add(
        gettext_noop("Caching-allocator reserve: %(percent)s%% of the peak."),
        RESERVE_SOURCE,
        percent=round(100 * reserve / peak) if peak else 0,
    )
    breakdown = peak_parts.model_copy(
        update={"cuda_context": context, "allocator_reserve": reserve}
    )
    return EstimateResult(
        breakdown=breakdown,
        peak_allocated_bytes=peak,
        total_bytes=breakdown.total(),
        peak_phase=phase,
        params_total=arch.params_total,
        params_trainable=trainable,
        params_active=arch.params_active,
        num_gpus=request.num_gpus,
        assumptions=notes.items,
        approximate=arch.approximate_reason is not None,
        approximate_reason=arch.approximate_reason,
        layer_kinds=layer_kinds or [],
    )

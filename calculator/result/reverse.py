"""'What fits in my VRAM': the tier table and the per-GPU model list, by searching the estimator.

Nothing here is a second formula: every answer is a monotone search (bisection) over the
estimator's own result — more parameters or a longer context never need less memory, and more
memory never fits less. Whether a result fits is decided once per runtime (``fits``), the same
way the calculator page decides its verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any

from calculator.catalogue.models import DEFAULT_USABLE_FRACTION, ModelPreset
from calculator.catalogue.selectors import preset_description
from calculator.estimator import (
    Architecture,
    ConfigModel,
    CustomModel,
    EstimateRequest,
    EstimateResult,
    resolve_architecture,
)
from calculator.estimator.bounds import MAX_SEQ_LEN
from calculator.estimator.core import llama_cpp_layout, llama_cpp_options, vllm_options
from calculator.estimator.precision import BYTES_PER_ELEMENT
from calculator.estimator.runtimes import longest_context_full_offload, longest_max_model_len
from calculator.estimator.runtimes.commands import override_tensors_text
from calculator.estimator.runtimes.llama_cpp import GGML_BLOCK
from calculator.estimator.runtimes.llama_cpp_fit import fit_params
from calculator.estimator.runtimes.vllm import unsupported_gpu
from calculator.estimator.speed import GpuPerformance, estimate_speed
from calculator.result.presenters import cached_estimate, largest_fitting, runtime_fits

TIERS_GB = (16, 24, 48, 80, 96, 128, 160, 192, 256, 320, 384, 512)
PRECISIONS_BY_MODE = {
    "inference": ("fp32", "bf16", "int8", "int4", "int2"),
    "lora": ("fp32", "bf16", "int8", "int4", "int2"),
    "qlora": ("nf4",),
    "full_finetune": ("fp32", "bf16", "mixed"),
}
# The GGUF files people download most, most precise first. Q4_K_M is what Ollama's library tags
# and most GGUF model cards default to ("latest" = …-q4_K_M); Q8_0 and Q6_K are the near-lossless
# step up, Q3_K_M and Q2_K what squeezes a model into a small card. The quality cost of each, as
# llama.cpp's quantize tool prints it (tools/quantize/quantize.cpp QUANT_OPTIONS, perplexity
# increase on Llama-3-8B): Q8_0 +0.0026, Q6_K +0.0217, Q4_K_M +0.1754, Q3_K_M +0.6569,
# Q2_K +3.5199 — so Q2_K is marked as a large quality loss, like 2-bit weights elsewhere.
GGUF_COLUMNS = ("F16", "Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M", "Q2_K")
# vLLM's --quantization for the checkpoints people serve: the published BF16 weights, FP8
# (one byte per weight) and AWQ (4-bit groups of 128).
VLLM_COLUMNS = ("none", "fp8", "awq")
# Formats that run with a large loss of quality (see presenters.PRECISION_QUALITY and above).
LARGE_QUALITY_LOSS = frozenset({"int2", "Q2_K"})
NAIVE_BYTES = {
    "fp32": 4.0,
    "bf16": 2.0,
    "int8": 1.0,
    "int4": 0.5,
    "int2": 0.25,
    "nf4": 0.5,
    "mixed": 2.0,
    # vLLM: the stored weight alone, without scales.
    "none": 2.0,
    "fp8": 1.0,
    "awq": 0.5,
}
# Modern checkpoints use grouped-query attention with 8 KV heads (Llama 3, Qwen 2.5, Mistral).
TIER_KV_HEADS = 8
# Relative resolution of the tier search: a tenth of the one decimal the table prints at 100B.
SEARCH_RESOLUTION = 1e-4


def precisions_for(mode: str, runtime: str) -> tuple[str, ...]:
    """The table's columns: weight formats for transformers, GGUF file types for llama.cpp,
    vLLM's --quantization values for vLLM."""
    if runtime == "llama_cpp":
        return GGUF_COLUMNS
    if runtime == "vllm":
        return VLLM_COLUMNS
    return PRECISIONS_BY_MODE[mode]


@dataclass(frozen=True)
class Workload:
    mode: str
    seq_len: int
    batch_size: int
    runtime: str = "transformers"
    # Training only: the training stack, and whether activations are checkpointed (full
    # checkpointing: each layer keeps its input) or not at all.
    training_stack: str = "hf_trainer"
    checkpointing: bool = False

    @property
    def precisions(self) -> tuple[str, ...]:
        return precisions_for(self.mode, self.runtime)

    def request(
        self,
        model: dict[str, Any] | ConfigModel,
        precision: str,
        *,
        usable_bytes: int | None = None,
        **extra: Any,
    ) -> EstimateRequest:
        """The estimator's request for ``model`` in the format ``precision`` of this runtime;
        vLLM sizes its pool from ``usable_bytes`` (what the calculator page passes it)."""
        fields: dict[str, Any] = {
            "model": model,
            "mode": self.mode,
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            "kv_cache_precision": "bf16" if self.runtime == "transformers" else None,
            "precision": "bf16",
            **extra,
        }
        if self.mode != "inference":
            fields["kv_cache_precision"] = None
            fields["training_stack"] = self.training_stack
            fields["activation_checkpointing"] = "full" if self.checkpointing else "none"
        if self.runtime == "llama_cpp":
            # All layers on the GPU, -c holding batch slots of seq tokens (as the calculator
            # form builds it); llama-server's defaults otherwise.
            fields.update(
                runtime="llama_cpp",
                llama_cpp={
                    "gguf_type": precision,
                    "n_ctx": self.seq_len * self.batch_size,
                    "n_parallel": self.batch_size,
                },
            )
        elif self.runtime == "vllm":
            fields.update(
                runtime="vllm",
                vllm={
                    "gpu_memory_bytes": usable_bytes,
                    "max_model_len": self.seq_len,
                    "quantization": precision,
                },
            )
        elif precision == "mixed":
            fields.update(precision="bf16", mixed_precision=True)
        elif precision != "nf4":
            fields["precision"] = precision
        return EstimateRequest.model_validate(fields)


def _fits_in_memory(result: EstimateResult, usable_bytes: int) -> bool:
    return result.total_bytes <= usable_bytes


# Whether a result fits, per runtime. transformers: its total (peak + CUDA context + allocator
# reserve); llama.cpp: its GPU buffers with all layers offloaded, plus the CUDA context; vLLM: it
# starts (presenters.runtime_fits, as the calculator's verdict).
FITS: dict[str, Callable[[EstimateResult, int], bool]] = {
    "transformers": _fits_in_memory,
    "llama_cpp": _fits_in_memory,
    "vllm": runtime_fits,
}


def fits(workload: Workload, result: EstimateResult, usable_bytes: int) -> bool:
    return FITS[workload.runtime](result, usable_bytes)


def _descriptions(presets: list[ModelPreset]) -> dict[int, ConfigModel]:
    """One model description per preset, so each config is parsed once for all precisions."""
    return {preset.pk: preset_description(preset=preset) for preset in presets}


def tier_usable_bytes(gb: float) -> int:
    """Usable memory of a card marketed as ``gb`` GB (the catalogue's default share)."""
    return int(Decimal(gb) * (1 << 30) * DEFAULT_USABLE_FRACTION)


def reference_model(params_billion: float) -> dict[str, Any]:
    """The model of ``params_billion`` the headline search tries: the estimator's custom shape
    with 8 KV heads, whose tensors add up to the size under every runtime."""
    return {"params_billion": params_billion, "num_kv_heads": TIER_KV_HEADS}


def _reference_shape(params_billion: float) -> Architecture:
    return resolve_architecture(CustomModel.model_validate(reference_model(params_billion)))


def reference_params_billion(workload: Workload, params_billion: float) -> float:
    """The size the reference model of ``params_billion`` really has: the stated size, except
    under llama.cpp, which loads only the shape's tensors (their count is within 256 MLP
    columns of it)."""
    if workload.runtime != "llama_cpp":
        return params_billion
    shape = _reference_shape(params_billion).model_copy(update={"params_override": None})
    return shape.params_total / 1e9


def room_bytes(result: EstimateResult, usable_bytes: int) -> int:
    """How far a result is from the fit condition, in bytes (negative: it does not fit): only
    a guide for where to look next; ``fits`` decides."""
    started = result.vllm
    if started is None or result.total_bytes > usable_bytes:
        return usable_bytes - result.total_bytes
    block_bytes = max(started.kv_bytes_per_token, 1) * max(
        started.kv_cache_tokens // max(started.num_gpu_blocks, 1), 1
    )
    return (started.num_gpu_blocks - started.blocks_per_request) * block_bytes


def params_fit(
    workload: Workload, precision: str, params_billion: float, usable_bytes: int
) -> bool:
    """Whether the reference-shape model of ``params_billion`` fits in ``usable_bytes``."""
    return _probe(workload, precision, params_billion, usable_bytes)[0]


def _probe(
    workload: Workload, precision: str, params_billion: float, usable_bytes: int
) -> tuple[bool, int]:
    model = reference_model(params_billion)
    request = workload.request(model, precision, usable_bytes=usable_bytes)
    result = cached_estimate(request)
    return fits(workload, result, usable_bytes), room_bytes(result, usable_bytes)


def _neighbours(workload: Workload, low: float, high: float) -> bool:
    """Whether no llama.cpp reference model lies strictly between the sizes ``low`` and
    ``high``: llama.cpp loads only the shape's tensors, which come in steps of 256 MLP columns,
    so the search can stop there."""
    if workload.runtime != "llama_cpp":
        return False
    (layers, hidden, smaller), (layers_high, hidden_high, larger) = (
        _reference_dims(low),
        _reference_dims(high),
    )
    return (layers, hidden) == (layers_high, hidden_high) and larger - smaller <= 256


@lru_cache(maxsize=4096)
def _reference_dims(params_billion: float) -> tuple[int, int, int]:
    """Depth, width and MLP width of the reference model: each search step compares the two
    ends of its bracket, which earlier steps have mostly met already."""
    shape = _reference_shape(params_billion)
    return shape.num_layers, shape.hidden_size, shape.intermediate_size


def largest_params_billion(workload: Workload, precision: str, usable_bytes: int) -> float:
    """The largest model (in billions) of the reference shape that fits."""
    size = largest_fitting_size(workload, precision, usable_bytes)
    return reference_params_billion(workload, size) if size else 0.0


def largest_fitting_size(
    workload: Workload, precision: str, usable_bytes: int, *, at_least: float = 0.01
) -> float:
    """The largest size (in billions, as the reference model is asked for) that fits, to 0.01%.

    A bracket [fits, does not fit] that only ever shrinks: memory is close to affine in the
    parameter count, so a secant step through the two ends lands next to the answer and a probe
    either side of it closes the bracket; a step that does not halve the bracket (on a log
    scale) is followed by a bisection step. ``at_least`` is a size known to fit (the answer for
    a smaller card), which narrows the search.
    """
    low = max(at_least, 0.01)
    low_fits, low_room = _probe(workload, precision, low, usable_bytes)
    if not low_fits:
        if low == 0.01:
            return 0.0
        return largest_fitting_size(workload, precision, usable_bytes)
    high = 20_000.0
    # Every runtime's weights take at least the naive bytes per parameter, so 1.5 × the naive
    # figure never fits; checking it keeps the search exact if that ever changed.
    ceiling = 1.5 * naive_billion(usable_bytes / (1 << 30), precision)
    if low < ceiling < high:
        ceiling_fits, ceiling_room = _probe(workload, precision, ceiling, usable_bytes)
        if ceiling_fits:
            low, low_room = ceiling, ceiling_room
        else:
            high, high_room = ceiling, ceiling_room
    if high == 20_000.0:
        high_fits, high_room = _probe(workload, precision, high, usable_bytes)
        if high_fits:
            return high
    step = 1 + SEARCH_RESOLUTION / 2
    last_moved, rounds = "", 0
    while high / low > 1 + SEARCH_RESOLUTION and not _neighbours(workload, low, high):
        rounds += 1
        if low_room > high_room and rounds <= 12:
            guess = low + (high - low) * low_room / (low_room - high_room)
        else:  # a flat stretch, or a search that does not settle: bisect
            guess = math.sqrt(low * high)
        guess = min(max(guess, low * step), high / step)
        moved = ""
        trials = [t for t in (guess / step, guess * step) if low < t < high]
        for trial in trials or [math.sqrt(low * high)]:
            trial_fits, trial_room = _probe(workload, precision, trial, usable_bytes)
            if trial_fits:
                low, low_room, moved = trial, trial_room, "low"
            else:
                high, high_room, moved = trial, trial_room, "high"
                break
        # Illinois: an end that stays put twice weighs half as much in the next secant step.
        if moved == last_moved == "low":
            high_room //= 2
        elif moved == last_moved == "high":
            low_room //= 2
        last_moved = moved
    return low


@dataclass(frozen=True)
class Example:
    preset: ModelPreset
    total_bytes: int
    above_headline: bool = False


@dataclass(frozen=True)
class Cell:
    precision: str
    honest_billion: float
    naive_billion: float
    examples: list[Example]


@dataclass(frozen=True)
class TierRow:
    gb: int
    usable_bytes: int
    cells: list[Cell]


def _smallest_fitting_tier(
    workload: Workload, model: ConfigModel, precision: str, usables: list[int]
) -> int | None:
    """Index of the smallest tier the model fits in (None: not even the largest); fitting is
    monotone in memory, so a bisection over the tiers finds it."""

    def fits_tier(index: int) -> bool:
        usable = usables[index]
        request = workload.request(model, precision, usable_bytes=usable)
        return fits(workload, cached_estimate(request), usable)

    if not fits_tier(len(usables) - 1):
        return None
    low, high = -1, len(usables) - 1  # low does not fit (or is below the table), high fits
    while high - low > 1:
        middle = (low + high) // 2
        if fits_tier(middle):
            high = middle
        else:
            low = middle
    return high


def tier_examples(
    workload: Workload,
    presets: list[ModelPreset],
    precision: str,
    usables: list[int],
    models: dict[int, ConfigModel] | None = None,
) -> list[list[tuple[ModelPreset, int]]]:
    """Per tier, the three largest catalogue models that fit, with their totals there."""
    models = models or _descriptions(presets)
    examples: list[list[tuple[ModelPreset, int]]] = [[] for _ in usables]
    for preset in sorted(presets, key=lambda p: -p.params_total):
        first = _smallest_fitting_tier(workload, models[preset.pk], precision, usables)
        if first is None:
            continue
        for index in range(first, len(usables)):
            if len(examples[index]) < 3:
                usable = usables[index]
                request = workload.request(models[preset.pk], precision, usable_bytes=usable)
                result = cached_estimate(request)
                if fits(workload, result, usable):  # checked, not assumed from the bisection
                    examples[index].append((preset, result.total_bytes))
        # Smaller models come later: once every tier lists three, none of them can show up.
        if all(len(listed) == 3 for listed in examples):
            break
    return examples


def tier_table(workload: Workload, presets: list[ModelPreset]) -> list[TierRow]:
    usables = [tier_usable_bytes(gb) for gb in TIERS_GB]
    models = _descriptions(presets)
    columns = []
    for precision in workload.precisions:
        examples = tier_examples(workload, presets, precision, usables, models)
        headline = 0.01
        column = []
        for gb, usable, listed in zip(TIERS_GB, usables, examples, strict=True):
            size = largest_fitting_size(workload, precision, usable, at_least=headline)
            headline = max(size, 0.01)
            honest = reference_params_billion(workload, size) if size else 0.0
            # Examples larger than the reference shape fit because they need less memory per
            # parameter beside the weights (fewer KV heads or layers, sliding windows); they
            # are marked, so the headline never silently contradicts them.
            column.append(
                Cell(
                    precision=precision,
                    honest_billion=honest,
                    naive_billion=naive_billion(gb, precision),
                    examples=[
                        Example(p, t, above_headline=p.params_total > honest * 1e9)
                        for p, t in listed
                    ],
                )
            )
        columns.append(column)
    return [
        TierRow(gb, usable, [column[index] for column in columns])
        for index, (gb, usable) in enumerate(zip(TIERS_GB, usables, strict=True))
    ]


@dataclass(frozen=True)
class ModelFit:
    preset: ModelPreset
    precision: str
    max_context: int
    total_bytes: int
    tokens_per_s: float | None = None  # generation of one sequence, or training per GPU


def longest_context(
    workload: Workload,
    request: EstimateRequest,
    result: EstimateResult,
    usable_bytes: int,
    limit: int,
) -> int:
    """The longest context (tokens per sequence) that still fits, as each runtime counts it:
    transformers' seq_len, llama.cpp's n_ctx at full offload over its slots, vLLM's longest
    --max-model-len that starts; at most ``limit``."""
    if workload.runtime == "llama_cpp":
        # llama.cpp's buffers must fit beside the CUDA context (as on the calculator page).
        room = max(usable_bytes - result.breakdown.cuda_context, 0)
        n_ctx = longest_context_full_offload(
            resolve_architecture(request.model),
            llama_cpp_options(request),
            room,
            devices=request.num_gpus,
            # llama.cpp's -c is bounded like any context (LlamaCppOptions.n_ctx).
            limit=max(min(limit * workload.batch_size, MAX_SEQ_LEN), 256),
            layout=llama_cpp_layout(request),
        )
        return min(n_ctx // workload.batch_size, limit)
    if workload.runtime == "vllm":
        longest = longest_max_model_len(resolve_architecture(request.model), vllm_options(request))
        return min(longest, limit)
    return largest_fitting(request, "seq_len", usable_bytes, limit) or 0


def runnable_formats(workload: Workload, *, vendor: str, fp8_support: bool) -> tuple[str, ...]:
    """The table's formats the runtime can use on a GPU of ``vendor``: vLLM's --quantization
    values with a kernel there (``runtimes.vllm.unsupported_gpu``; none on an Apple GPU), every
    format under the other runtimes."""
    if workload.runtime != "vllm":
        return workload.precisions
    return tuple(
        quantization
        for quantization in workload.precisions
        if unsupported_gpu(vendor=vendor, fp8_support=fp8_support, quantization=quantization)
        is None
    )


def models_that_fit(
    workload: Workload,
    presets: list[ModelPreset],
    usable_bytes: int,
    gpu_count: int,
    *,
    speed_gpu: GpuPerformance | None = None,
    formats: tuple[str, ...] | None = None,
) -> list[ModelFit]:
    """Every catalogue model that fits: its most precise format (of ``formats``, by default the
    table's), the longest context and, on a catalogue GPU (``speed_gpu``), how fast it
    generates (or trains) there."""
    extra: dict[str, Any] = {"num_gpus": gpu_count}
    # llama.cpp splits the layers over its GPUs (-sm layer) rather than each layer.
    if gpu_count > 1 and workload.runtime != "llama_cpp":
        extra.update(
            tensor_parallel=gpu_count if workload.mode == "inference" else 1,
            zero_stage=0 if workload.mode == "inference" else 3,
        )
    precisions = workload.precisions if formats is None else formats
    if not precisions:
        return []
    found = []
    models = _descriptions(presets)
    for preset in presets:

        def attempt(index: int, preset: ModelPreset = preset) -> tuple[EstimateRequest, Any]:
            request = workload.request(
                models[preset.pk], precisions[index], usable_bytes=usable_bytes, **extra
            )
            result = cached_estimate(request)
            return request, result if fits(workload, result, usable_bytes) else None

        # The least precise format first: a model that does not fit in it is out at once;
        # formats are ordered by size, so a bisection finds the most precise that fits.
        request, result = attempt(len(precisions) - 1)
        if result is None:
            continue
        best, low = len(precisions) - 1, -1
        while best - low > 1:
            middle = (low + best) // 2
            tried, tried_result = attempt(middle)
            if tried_result is None:
                low = middle
            else:
                best, request, result = middle, tried, tried_result
        limit = preset.max_context or 131_072
        context = longest_context(workload, request, result, usable_bytes, limit)
        found.append(
            ModelFit(
                preset,
                precisions[best],
                context,
                result.total_bytes,
                _tokens_per_s(request, result, speed_gpu) if speed_gpu else None,
            )
        )
    # 2-bit fits go last: they run, but with a large loss of quality (see PRECISION_QUALITY).
    return sorted(
        found, key=lambda fit: (fit.precision in LARGE_QUALITY_LOSS, -fit.preset.params_total)
    )


@dataclass(frozen=True)
class ExpertsInRamFit:
    """A MoE model that fits the GPUs only with routed experts in system RAM, as --fit
    places them."""

    preset: ModelPreset
    precision: str
    experts_in_ram: int  # layers whose experts stay in RAM
    layers: int
    gpu_bytes: int  # on the fullest GPU, with its CUDA context
    host_bytes: int
    tokens_per_s: float | None
    ngl: int | None
    override_tensors: str
    tensor_split: str = ""  # -ts on several GPUs
    request: EstimateRequest | None = None  # the estimate with --fit's settings


def models_with_experts_in_ram(
    workload: Workload,
    presets: list[ModelPreset],
    usable_bytes: int,
    gpu_count: int,
    *,
    ram_bytes: int | None = None,
    speed_gpu: GpuPerformance | None = None,
    whole: dict[int, str] | None = None,
    host_bandwidth_gb_s: float | None = None,
) -> list[ExpertsInRamFit]:
    """The catalogue's MoE models that llama.cpp's --fit runs on ``gpu_count`` cards of
    ``usable_bytes`` by leaving routed experts in system RAM (at most ``ram_bytes`` of it): each
    in the most precise file type that does so, and for a model that fits whole (``whole``:
    preset → the file type it fits in) only in a type more precise than that one."""
    if workload.runtime != "llama_cpp":
        return []
    whole = whole or {}
    found = []
    models = _descriptions(presets)
    for preset in presets:
        arch = resolve_architecture(models[preset.pk])
        if not arch.is_moe:
            continue
        formats = workload.precisions
        if preset.pk in whole:
            formats = formats[: formats.index(whole[preset.pk])]

        def attempt(
            index: int, preset: ModelPreset = preset, formats: tuple[str, ...] = formats
        ) -> ExpertsInRamFit | None:
            return _experts_in_ram_fit(
                workload,
                preset,
                models[preset.pk],
                formats[index],
                usable_bytes,
                gpu_count,
                ram_bytes,
            )

        # Formats run from the most precise: GPU and RAM needs both fall along them, so the
        # most precise that runs is found by bisection, starting from the least precise.
        if not formats or (best := attempt(len(formats) - 1)) is None:
            continue
        low, high = -1, len(formats) - 1
        while high - low > 1:
            middle = (low + high) // 2
            tried = attempt(middle)
            if tried is None:
                low = middle
            else:
                high, best = middle, tried
        found.append(_with_speed(best, speed_gpu, host_bandwidth_gb_s))
    return sorted(found, key=lambda fit: -fit.preset.params_total)


def _experts_in_ram_fit(
    workload: Workload,
    preset: ModelPreset,
    model: ConfigModel,
    precision: str,
    usable_bytes: int,
    gpu_count: int,
    ram_bytes: int | None,
) -> ExpertsInRamFit | None:
    """--fit's placement of ``model`` in ``precision`` when it leaves experts in RAM and the
    machine's RAM holds the rest; None otherwise."""
    request = workload.request(model, precision, num_gpus=gpu_count)
    arch = resolve_architecture(model)
    context_bytes = cached_estimate(request).breakdown.cuda_context
    room = max(usable_bytes - context_bytes, 0)
    fitted = fit_params(
        arch, llama_cpp_options(request), [room] * gpu_count, layout=llama_cpp_layout(request)
    )
    host = fitted.result.host_bytes
    if not (fitted.fits and fitted.experts_in_ram_layers):
        return None
    if ram_bytes is not None and host > ram_bytes:
        return None
    return ExpertsInRamFit(
        preset,
        precision,
        fitted.experts_in_ram_layers,
        arch.num_layers,
        max(device.used_bytes for device in fitted.devices) + context_bytes,
        host,
        None,
        fitted.options.n_gpu_layers,
        override_tensors_text(fitted.options.override_tensors),
        ",".join(f"{share:g}" for share in fitted.options.tensor_split or ()),
        request.model_copy(update={"llama_cpp": fitted.options}),
    )


def _with_speed(
    fit: ExpertsInRamFit, gpu: GpuPerformance | None, host_bandwidth_gb_s: float | None
) -> ExpertsInRamFit:
    if gpu is None or fit.request is None:
        return fit
    result = cached_estimate(fit.request)
    speed = estimate_speed(
        resolve_architecture(fit.request.model),
        fit.request,
        result,
        gpu,
        runtime="llama_cpp",
        llama_cpp=result.llama_cpp,
        host_memory_bandwidth_gb_s=host_bandwidth_gb_s,
    )
    return replace(fit, tokens_per_s=speed.decode_tokens_per_s)


def _tokens_per_s(
    request: EstimateRequest, result: EstimateResult, gpu: GpuPerformance
) -> float | None:
    """One sequence's generation speed (inference) or the training tokens/s per GPU."""
    speed = estimate_speed(
        resolve_architecture(request.model),
        request,
        result,
        gpu,
        runtime=request.runtime,
        llama_cpp=result.llama_cpp,
        vllm=result.vllm,
    )
    if request.mode == "inference":
        return speed.decode_tokens_per_s
    return speed.training_tokens_per_s_per_gpu


def naive_bytes_per_param(precision: str) -> float:
    """Bytes per weight of a format alone: a GGUF type's base ggml block (Q4_K_M → Q4_K)."""
    if precision in NAIVE_BYTES:
        return NAIVE_BYTES[precision]
    base = precision if precision in GGML_BLOCK else precision.rsplit("_", 1)[0]
    if base in GGML_BLOCK:
        elements, size = GGML_BLOCK[base]
        return size / elements
    return BYTES_PER_ELEMENT.get(precision, 2.0)


def naive_billion(gb: float, precision: str) -> float:
    """What simple tables print: all of the card's memory (GB as marketed, which GPU vendors
    count in GiB) divided by bytes per parameter."""
    return gb * (1 << 30) / naive_bytes_per_param(precision) / 1e9


def calculator_query(
    workload: Workload,
    preset: ModelPreset,
    precision: str,
    gpus: int = 1,
    *,
    gpu_slug: str = "",
    vram_gb: float | None = None,
) -> str:
    """The calculator permalink for a model at a setting of this page, checked against the
    GPU (or the memory amount) chosen here, with the same runtime and format."""
    from urllib.parse import urlencode

    params: dict[str, Any] = {
        "model": preset.display_name,
        "mode": workload.mode,
        "seq": workload.seq_len,
        "batch": workload.batch_size,
    }
    if workload.runtime == "llama_cpp":
        params.update(runtime="llama_cpp", gguf=precision)
    elif workload.runtime == "vllm":
        params.update(runtime="vllm", quant=precision)
    else:
        params["precision"] = "bf16" if precision in {"mixed", "nf4"} else precision
        if precision == "mixed":
            params["mixed"] = "on"
        if workload.mode == "inference":
            params["kv"] = "bf16"
        else:
            params["stack"] = workload.training_stack
            if workload.checkpointing:
                params.update(ckpt="on", act_ckpt="full")
            else:
                params["act_ckpt"] = "none"
    if gpu_slug:
        params["gpu"] = gpu_slug
    elif vram_gb:
        params["vram"] = f"{vram_gb:g}"
    if gpus > 1:
        params["gpus"] = gpus
        if workload.runtime == "llama_cpp":
            pass  # the layers are split over the GPUs: no tensor parallelism
        elif workload.mode == "inference":
            params["tp"] = gpus
        else:
            params["zero"] = 3
    return urlencode(params)

"""Turns an estimate into what the page shows: units, shares, chart segments, verdicts, levers.

Functions of the estimator's result and plain values; no queries and no request.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from calculator.catalogue.models import GpuSpec
from calculator.estimator import Architecture, EstimateRequest, EstimateResult, estimate
from calculator.estimator.bounds import MAX_BATCH, MAX_SEQ_LEN
from calculator.estimator.stacks import STACKS
from calculator.inputs.l10n import decimal, gettext_memo, labels

GIB = 1 << 30

COMPONENTS = [
    ("weights", _("Weights"), "#3b6fd8"),
    ("quantization_overhead", _("Quantization scales"), "#7c9be6"),
    ("master_weights", _("FP32 master weights"), "#1f3f8f"),
    ("adapters", _("LoRA adapters"), "#52a3a8"),
    ("kv_cache", _("KV cache"), "#e0a030"),
    ("activations", _("Activations"), "#d9534f"),
    ("logits", _("Logits and loss"), "#b15fc9"),
    ("gradients", _("Gradients"), "#4cae4c"),
    ("optimizer_states", _("Optimizer states"), "#2d7d2d"),
    ("cuda_context", _("CUDA context"), "#8a8a8a"),
    ("allocator_reserve", _("Allocator reserve"), "#bdbdbd"),
]
COMPONENT_LABELS = {key: label for key, label, _color in COMPONENTS}

EXPLANATIONS = {
    "weights": _(
        "Parameters × bytes per parameter at the chosen precision (quantized: packed bits)."
    ),
    "quantization_overhead": _(
        "Per-group scales and zero points that quantized formats store beside the packed weights."
    ),
    "master_weights": _(
        "Mixed precision keeps an FP32 copy of every weight for the optimizer update."
    ),
    "adapters": _(
        "LoRA's trained matrices A and B: rank × (inputs + outputs) per adapted layer, in FP32."
    ),
    "kv_cache": _("2 (keys and values) × batch × tokens × layers × KV heads × head size × bytes."),
    "activations": _(
        "Tensors the backward pass needs (training) or the largest working set of one layer (inference)."
    ),
    "logits": _("Batch × tokens × vocabulary scores, upcast to FP32 for the loss in training."),
    "gradients": _("One gradient per trained parameter, in the parameters' dtype."),
    "optimizer_states": _("Optimizer moments per trained parameter, plus the step's temporaries."),
    "cuda_context": _("What CUDA, cuBLAS and kernels take before any tensor exists."),
    "allocator_reserve": _("PyTorch's caching allocator keeps freed blocks and rounds sizes up."),
}


# What each row holds when a serving runtime allocates the memory (its buffers, not a prefill).
RUNTIME_EXPLANATIONS = {
    ("llama_cpp", "weights"): _(
        "The GGUF tensors of the layers on the GPU, each in the type the file type gives it (llama.cpp's model buffer)."
    ),
    ("llama_cpp", "kv_cache"): _(
        "K and V for every cell of -c on the GPU's attention layers, in the cache types chosen (llama.cpp's KV buffer)."
    ),
    ("llama_cpp", "activations"): _(
        "The worst-case graph reserved at load: one micro-batch (-ub) against the full context (llama.cpp's compute buffer)."
    ),
    ("vllm", "weights"): _("The weights on each GPU as vLLM loads them (“Model loading took”)."),
    ("vllm", "activations"): _(
        "The profiling run's peak at max-num-batched-tokens, the sampler included; vLLM keeps it free."
    ),
    ("vllm", "kv_cache"): _(
        "The KV-cache pool: what gpu-memory-utilization leaves after weights, profiling peak and non-torch memory."
    ),
    ("vllm", "cuda_context"): _(
        "CUDA context and kernels, plus cuBLAS and NCCL memory outside PyTorch (“non-torch memory”)."
    ),
    ("vllm", "allocator_reserve"): _(
        "CUDA graphs captured after the pool is allocated (none with --enforce-eager)."
    ),
}


def gib(value: int) -> float:
    return value / GIB


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    color: str
    bytes: int
    gib: float
    share: float
    explanation: str
    # The figure as the page writes it (fmt.gib): the chart's text, its title and the table
    # show it, formatted once.
    gib_text: str = ""


def breakdown_rows(
    result: EstimateResult,
    request: EstimateRequest | None = None,
    arch: Architecture | None = None,
) -> list[Row]:
    values = result.breakdown.model_dump()
    total = result.total_bytes or 1
    rows = []
    # The texts in the active language, translated once per language (labels()).
    label_texts, explanations = labels(COMPONENT_LABELS), labels(EXPLANATIONS)
    runtime_texts = labels(RUNTIME_EXPLANATIONS)
    for key, _label, color in COMPONENTS:
        if not values.get(key):
            continue
        explanation = explanations[key]
        runtime_text = runtime_texts.get((result.runtime, key))
        if key == "weights" and result.checkpoint_weight_bytes is not None:
            explanation = f"{runtime_text or explanation} {checkpoint_weights_text(result)}"
        elif runtime_text is not None:
            explanation = runtime_text
        elif request is not None and arch is not None:
            plugged = formula(key, request, result, arch)
            if plugged:
                explanation = f"{explanation} {plugged}"
        rows.append(
            Row(
                key,
                label_texts[key],
                color,
                values[key],
                gib(values[key]),
                100 * values[key] / total,
                explanation,
                decimal(values[key] / (1 << 30), 2),
            )
        )
    return rows


def checkpoint_weights_text(result: EstimateResult) -> str:
    """The weight line of a pre-quantized checkpoint in its own format: its stored bytes."""
    return str(
        gettext_memo(
            "= %(bytes)s bytes as the checkpoint stores them (scales, zero points and unquantized layers included); %(share)s bytes on this GPU."
        )
        % {"bytes": _n(result.checkpoint_weight_bytes or 0), "share": _n(result.breakdown.weights)}
    )


def _n(value: float) -> str:
    return decimal(value, 0)


def formula(key: str, request: EstimateRequest, result: EstimateResult, arch: Architecture) -> str:
    """The component's formula with this request's numbers plugged in (per GPU)."""
    bytes_of = {
        "fp32": "4",
        "fp16": "2",
        "bf16": "2",
        "fp8": "1",
        "int8": "1",
        "int4": "½",
        "int2": "¼",
    }
    kv_dtype = request.kv_cache_precision or (
        request.precision if request.precision in {"fp32", "fp16", "bf16"} else "bf16"
    )
    tokens = request.batch_size * request.seq_len
    if key == "weights":
        return _weights_formula(request, result, arch, bytes_of)
    if key == "kv_cache":
        return gettext_memo(
            "= 2 × %(layers)s layers × %(kv)s KV heads × %(dim)s × %(bytes)s bytes × %(batch)s × %(seq)s tokens."
        ) % {
            "layers": arch.num_layers,
            "kv": arch.num_kv_heads,
            "dim": arch.head_dim,
            "bytes": bytes_of.get(kv_dtype, "2"),
            "batch": request.batch_size,
            "seq": _n(request.seq_len),
        }
    if key == "logits":
        if request.mode == "inference":
            return gettext_memo(
                "= %(batch)s × %(vocab)s vocabulary entries, last position only."
            ) % {
                "batch": request.batch_size,
                "vocab": _n(arch.vocab_size),
            }
        return gettext_memo(
            "= %(tokens)s tokens × %(vocab)s vocabulary entries × 4 bytes, up to three at once."
        ) % {
            "tokens": _n(tokens),
            "vocab": _n(arch.vocab_size),
        }
    if key in {"gradients", "optimizer_states"} and result.params_trainable:
        return gettext_memo("%(params)s trained parameters.") % {
            "params": _n(result.params_trainable)
        }
    if key == "master_weights":
        return gettext_memo("= %(params)s parameters × 4 bytes.") % {
            "params": _n(result.params_total)
        }
    if key == "adapters":
        return gettext_memo("= %(params)s parameters × 4 bytes.") % {
            "params": _n(result.params_trainable)
        }
    if key == "activations":
        return gettext_memo("%(tokens)s tokens × %(layers)s layers, hidden size %(hidden)s.") % {
            "tokens": _n(tokens),
            "layers": arch.num_layers,
            "hidden": _n(arch.hidden_size),
        }
    return ""


def _weights_formula(
    request: EstimateRequest, result: EstimateResult, arch: Architecture, bytes_of: dict[str, str]
) -> str:
    """Quantized weights: the packed linear layers and the part kept in 16 (QLoRA: 32) bits are
    two terms, so the formula multiplies out to the figure beside it."""
    precision = "nf4" if request.mode == "qlora" else request.precision
    quantized = precision in {"fp8", "int8", "int4", "int2", "nf4"}
    if request.mixed_precision:
        precision = "fp32"
    if not quantized:
        text = gettext_memo("= %(params)s parameters × %(bytes)s bytes.") % {
            "params": _n(result.params_total),
            "bytes": bytes_of.get(precision, "2"),
        }
    else:
        linear = min(arch.linear_params, result.params_total)
        kept_dtype = "fp32" if request.mode == "qlora" else "bf16"
        text = gettext_memo(
            "= %(linear)s parameters of linear layers × %(bytes)s bytes + %(kept)s parameters of embeddings, LM head and norms, kept in %(dtype)s, × %(kept_bytes)s bytes."
        ) % {
            "linear": _n(linear),
            "bytes": "½" if precision == "nf4" else bytes_of.get(precision, "2"),
            "kept": _n(result.params_total - linear),
            "dtype": kept_dtype.upper(),
            "kept_bytes": bytes_of[kept_dtype],
        }
    shards = request.num_gpus if request.zero_stage == 3 else request.tensor_parallel
    if shards > 1:
        text += " " + gettext_memo("Split over %(n)s GPUs.") % {"n": shards}
    return str(text)


@dataclass(frozen=True)
class Segment:
    label: str
    color: str
    x: float
    width: float
    gib: float
    gib_text: str = ""


def chart_segments(rows: list[Row], scale_bytes: int, width: float = 1000.0) -> list[Segment]:
    """Horizontal stacked bar: each component's share of ``scale_bytes`` as SVG x/width."""
    segments = []
    x = 0.0
    for row in rows:
        w = width * row.bytes / scale_bytes if scale_bytes else 0.0
        segments.append(Segment(row.label, row.color, x, w, row.gib, row.gib_text))
        x += w
    return segments


@dataclass(frozen=True)
class Verdict:
    fits: bool
    usable_gib: float
    nominal_gib: float
    headroom_percent: float
    shortfall_gib: float
    usable_bytes: int
    shortfall_bytes: int


FitState = Literal["fits", "gpu_short", "ram_short", "gpu_and_ram_short"]


@dataclass(frozen=True)
class RunVerdict:
    """Whether the setup runs: the card's verdict and the machine's RAM, together."""

    runs: bool
    fit_state: FitState
    gpu_fits: bool
    ram_fits: bool | None
    """None when no RAM was given or nothing is kept there."""


def run_verdict(gpu: Verdict, host: dict[str, Any] | None) -> RunVerdict:
    """One answer for the page, the exports and the API: the setup runs when the GPU holds its
    part (``runtime_verdict``) and the machine's RAM holds the rest (offloaded states, llama.cpp's
    host layers); otherwise it does not, and ``fit_state`` says which memory is short."""
    ram_fits = None if host is None else bool(host["fits"])
    ram_short = ram_fits is False
    state: FitState
    if gpu.fits:
        state = "ram_short" if ram_short else "fits"
    else:
        state = "gpu_and_ram_short" if ram_short else "gpu_short"
    return RunVerdict(state == "fits", state, gpu.fits, ram_fits)


def vllm_start_bytes(result: EstimateResult) -> int:
    """What vLLM needs free when it starts: its ``gpu_memory_utilization`` share of the card
    beside the CUDA context it has already created (vLLM refuses to start otherwise,
    ``vllm/v1/worker/gpu_worker.py``). CUDA graphs are captured afterwards from what is left."""
    started = result.vllm
    if started is None:
        return result.total_bytes
    return started.budget + result.breakdown.cuda_context - started.non_torch


def runtime_fits(result: EstimateResult, usable_bytes: int) -> bool:
    """Whether the run fits the card as its runtime decides: vLLM starts when its share fits
    beside the CUDA context and one max_model_len request fits its pool; the others when their
    total does."""
    if result.vllm is not None:
        return result.vllm.fits and vllm_start_bytes(result) <= usable_bytes
    return result.total_bytes <= usable_bytes


def runtime_verdict(
    result: EstimateResult, usable_bytes: int, nominal_bytes: int, *, block_size: int = 16
) -> Verdict:
    """The card's verdict as the runtime decides (``runtime_fits``). vLLM: its start-up share
    against the card; when that fits but one max_model_len request does not fit its pool of
    ``block_size``-token blocks, it does not start and the shortfall is the missing blocks."""
    memory = verdict(vllm_start_bytes(result), usable_bytes, nominal_bytes)
    started = result.vllm
    if started is None or not memory.fits or started.fits:
        return memory
    block_bytes = started.kv_bytes_per_token * block_size
    missing = max(started.blocks_per_request - started.num_gpu_blocks, 1) * block_bytes
    return replace(memory, fits=False, shortfall_gib=gib(missing), shortfall_bytes=missing)


def verdict(total_bytes: int, usable_bytes: int, nominal_bytes: int) -> Verdict:
    fits = total_bytes <= usable_bytes
    headroom = 100 * (usable_bytes - total_bytes) / usable_bytes if usable_bytes else 0.0
    shortfall = max(0, total_bytes - usable_bytes)
    return Verdict(
        fits,
        gib(usable_bytes),
        gib(nominal_bytes),
        headroom,
        gib(shortfall),
        usable_bytes,
        shortfall,
    )


_ESTIMATES: OrderedDict[tuple[str, str], EstimateResult] = OrderedDict()
# Least recently used first out. Each result is about 25 objects the garbage collector tracks and
# a full collection walks them all: at 20,000 results a worker paused 80-140 ms every thousand or
# so recomputes. 1,024 results hold a first view's estimates until its deferred part asks again.
_ESTIMATE_CACHE_SIZE = 1024


def cached_estimate(request: EstimateRequest) -> EstimateResult:
    """Identical requests (the same permalink, the same search step) are computed once per
    process. The key is the model's stable hash plus the small workload fields."""
    key = (request.model.cache_key(), request.model_dump_json(exclude={"model"}))
    result = _ESTIMATES.get(key)
    if result is None:
        if len(_ESTIMATES) >= _ESTIMATE_CACHE_SIZE:
            _ESTIMATES.popitem(last=False)
        result = _ESTIMATES[key] = estimate(request)
    else:
        _ESTIMATES.move_to_end(key)
    return result


def with_changes(request: EstimateRequest, **changes: object) -> EstimateRequest:
    """The same request with some workload fields changed, keeping the model description (and
    its parsed architecture). Validated like any request."""
    fields = request.model_dump(exclude={"model"})
    changed = EstimateRequest.model_validate({**fields, **changes, "model": {"config": {}}})
    return changed.model_copy(update={"model": request.model})


SHARDING_STEPS = (1, 2, 4, 8, 16, 32, 64)


def sharded_totals(request: EstimateRequest, enough_bytes: int | None = None) -> dict[int, int]:
    """Per-GPU total when the job is spread over n GPUs: tensor parallel for inference, ZeRO-3
    for training (the usual way to fit a model that is too big for one card).

    ``enough_bytes`` (the smallest card's usable memory): the counts stop at the first whose
    total every card holds, since no card then needs more (a 7B model: 1-2 estimates instead
    of 7, on the request every recompute makes next)."""
    totals: dict[int, int] = {}
    for n in SHARDING_STEPS:
        if enough_bytes is not None and totals and min(totals.values()) <= enough_bytes:
            break
        try:
            if request.mode == "inference":
                changed = with_changes(request, num_gpus=n, tensor_parallel=n, zero_stage=0)
            else:
                changed = with_changes(
                    request,
                    num_gpus=n,
                    tensor_parallel=1,
                    pipeline_parallel=1,
                    context_parallel=1,
                    micro_batches=None,
                    zero_stage=3 if n > 1 else request.zero_stage,
                )
            totals[n] = cached_estimate(changed).total_bytes
        except ValueError:  # a setting this many GPUs cannot take (pydantic's errors included)
            continue
    return totals


SEARCH_BOUNDS = {"seq_len": MAX_SEQ_LEN, "batch_size": MAX_BATCH}


def largest_fitting(
    request: EstimateRequest, field: str, usable_bytes: int, upper: int
) -> int | None:
    """The largest value of an integer field (batch, context) that still fits.

    Memory is affine in the batch and affine or quadratic in the context (Korthikanti et al.
    2022, §4: activations ∝ s·b·h, plus s²·a·b for materialised scores; KV cache ∝ b·s), so a
    secant step through two computed points lands on or next to the answer; each guess is
    checked exactly with the estimator and the bracket [fits, does not fit] only ever shrinks,
    with a bisection step whenever the secant stalls. The answer is exact: ``value`` fits and
    ``value + 1`` does not (or ``value`` is ``upper``).
    """

    def total(value: int) -> int:
        return cached_estimate(with_changes(request, **{field: value})).total_bytes

    # Probes stay inside what a request may ask (a preset's 10M-token window is past it).
    upper = min(upper, SEARCH_BOUNDS.get(field, upper))
    start = max(1, min(int(getattr(request, field)), upper))
    at_start = total(start)
    if at_start > usable_bytes:
        if start == 1:
            return None
        low, low_total, high, high_total = 1, total(1), start, at_start
        if low_total > usable_bytes:
            return None
    else:
        if start == upper:
            return start
        # Probe a second point to get a slope, then extrapolate to the limit.
        probe = min(upper, start * 2)
        probe_total = total(probe)
        low, low_total = start, at_start
        while probe_total <= usable_bytes:
            if probe == upper:
                return upper
            low, low_total = probe, probe_total
            slope = (probe_total - at_start) / max(1, probe - start)
            guess = probe + int((usable_bytes - probe_total) / slope) if slope > 0 else probe * 2
            probe = min(upper, max(guess, probe + 1))
            probe_total = total(probe)
        high, high_total = probe, probe_total
    # Secant (regula falsi) inside the bracket; a step that does not halve the bracket is
    # followed by a bisection step, so the search never takes more than about twice the
    # bisection's log2(range) evaluations.
    secant = True
    while high - low > 1:
        width = high - low
        if secant and high_total > low_total:
            fraction = (usable_bytes - low_total) / (high_total - low_total)
            guess = min(high - 1, max(low + 1, low + int(fraction * width)))
        else:
            guess = (low + high) // 2
        guess_total = total(guess)
        if guess_total <= usable_bytes:
            low, low_total = guess, guess_total
            if secant and high - low > 1:
                # A secant guess through near-linear memory lands just below the limit.
                above = total(low + 1)
                if above > usable_bytes:
                    return low
                low, low_total = low + 1, above
        else:
            high, high_total = guess, guess_total
            if secant and high - low > 1:
                below = total(high - 1)
                if below <= usable_bytes:
                    return high - 1
                high, high_total = high - 1, below
        secant = (high - low) * 2 <= width
    return low


PRECISION_ORDER = ("fp32", "bf16", "fp8", "int8", "int4", "int2")


def highest_fitting_precision(request: EstimateRequest, usable_bytes: int) -> str | None:
    """The most precise weight format that fits (inference and LoRA accept them all). The most
    compact format is tried first: when even it does not fit, nothing does (one run)."""
    allowed = PRECISION_ORDER if request.mode in {"inference", "lora"} else ("fp32", "bf16")

    def fits(precision: str) -> bool | None:
        try:
            changed = with_changes(request, precision=precision, mixed_precision=False)
        except ValueError:
            return None
        return cached_estimate(changed).total_bytes <= usable_bytes

    if fits(allowed[-1]) is False:
        return None
    for precision in allowed:
        if fits(precision):
            return precision
    return None


@dataclass(frozen=True)
class GpuGroup:
    """GPUs that need the same number of cards (so the same memory per card)."""

    count: int | None
    per_gpu_bytes: int | None
    gpus: list[GpuSpec]
    runs: bool = True  # False: the runtime cannot use these cards at all
    experts_in_ram: bool = False  # one card with some routed experts in RAM (--n-cpu-moe)


def gpu_fits(
    gpus: list[GpuSpec],
    totals: dict[int, int],
    fits: Callable[[GpuSpec, int], bool] | None = None,
    runs: Callable[[GpuSpec], bool] | None = None,
) -> list[GpuGroup]:
    """Catalogue GPUs grouped by how many of them hold the job, fewest first, smallest card first.
    ``totals``: bytes per GPU when the job spans n of them; ``fits(gpu, n)``: whether n such
    cards hold it (by default when a card's usable memory holds ``totals[n]``); ``runs(gpu)``:
    whether the runtime can use the card at all (those it cannot come last, in a group of
    their own)."""

    def holds(gpu: GpuSpec, n: int) -> bool:
        return fits(gpu, n) if fits is not None else totals[n] <= gpu.usable_bytes

    groups: dict[int | None, list[GpuSpec]] = {}
    refused: list[GpuSpec] = []
    for gpu in gpus:
        if runs is not None and not runs(gpu):
            refused.append(gpu)
            continue
        needed = next((n for n in sorted(totals) if holds(gpu, n)), None)
        groups.setdefault(needed, []).append(gpu)
    ordered = sorted(groups.items(), key=lambda item: item[0] or 10**6)

    def by_size(members: list[GpuSpec]) -> list[GpuSpec]:
        return sorted(members, key=lambda gpu: (float(gpu.memory_gb), gpu.name))

    listed = [
        GpuGroup(count, totals[count] if count else None, by_size(members))
        for count, members in ordered
    ]
    if refused:
        listed.append(GpuGroup(None, None, by_size(refused), runs=False))
    return listed


def markdown(
    result: EstimateResult,
    rows: list[Row],
    *,
    title: str,
    gpu_name: str | None,
    verdict: Verdict | None,
    link: str,
    inputs: list[tuple[str, str]] = (),  # type: ignore[assignment]
    notes: list[str] = (),  # type: ignore[assignment]
    run: RunVerdict | None = None,
    cpu_only: bool = False,
) -> str:
    """A Markdown summary to paste into an issue or a notebook, in the active language, with
    numbers rounded and formatted as the page shows them; with no GPU (``cpu_only``) the
    headline is the system RAM llama.cpp holds, as on the page."""
    from calculator.result.formatting import gib as fmt_gib
    from calculator.result.formatting import percent, phase_label

    per_gpu = _("per GPU") if result.num_gpus > 1 else _("total")
    shown = result.total_bytes
    if cpu_only:
        per_gpu, shown = _("of system RAM, no GPU"), result.host_bytes or 0
    lines = [
        f"### {title}: {fmt_gib(shown)} GiB {per_gpu}",
        "",
    ]
    if inputs:
        lines += [f"- {label}: {value}" for label, value in inputs]
        lines.append("")
    lines += [
        f"| {_('Component')} | GiB | {_('Share')} |",
        "|---|---:|---:|",
        *[f"| {row.label} | {fmt_gib(row.bytes)} | {percent(row.share, 1)} |" for row in rows],
        f"| **{_('Total')}** | **{fmt_gib(result.total_bytes)}** | {percent(100)} |",
        "",
        _("Peak of live tensors: %(peak)s GiB, reached in the %(phase)s.")
        % {"peak": fmt_gib(result.peak_allocated_bytes), "phase": phase_label(result.peak_phase)},
    ]
    if verdict is not None and gpu_name:
        state = _("fits") if verdict.fits else _("does not fit")
        if run is not None and run.fit_state == "ram_short":
            state = _("does not fit: system RAM is short")
        elif run is not None and run.fit_state == "gpu_and_ram_short":
            state = _("does not fit: GPU memory and system RAM are short")
        usable = fmt_gib(verdict.usable_bytes)
        lines.append(
            _("%(gpu)s: %(state)s (%(usable)s GiB usable).")
            % {"gpu": gpu_name, "state": state, "usable": usable}
        )
    if notes:
        lines += ["", *notes]
    lines += ["", link, ""]
    return "\n".join(str(line) for line in lines)


def _markdown_text(message: str, **values: object) -> str:
    """One of the result's sentences as the page writes it (the same catalogue entry), with
    its emphasis in Markdown."""
    text = gettext_memo(message) % values if values else gettext_memo(message)
    return text.replace("<strong>", "**").replace("</strong>", "**")


def result_notes(context: Mapping[str, Any]) -> list[str]:
    """The notes the result's summary shows under its verdict (system RAM and its verdict,
    the stack's switches, vLLM's pool, the speed, the run time and cost), as Markdown lines,
    from the template context the page renders (``Calculation.result_context``)."""
    result: EstimateResult = context["result"]
    request: EstimateRequest = context["request_obj"]
    return [
        *_context_notes(context, request),
        *_runtime_notes(context, result),
        *_host_notes(context, result),
        *_switches_notes(result),
        *_speed_notes(context.get("speed"), request),
    ]


def _context_notes(context: Mapping[str, Any], request: EstimateRequest) -> list[str]:
    from calculator.result.formatting import num

    lines: list[str] = []
    context_beyond = context.get("context_beyond")
    if context_beyond:
        lines.append(
            "⚠ "
            + _markdown_text(
                gettext_noop(
                    "%(seq)s tokens is beyond the %(window)s-token context this model was trained for (max_position_embeddings): the memory is as shown, but answers degrade past the window unless the model supports RoPE scaling."
                ),
                seq=num(request.seq_len),
                window=num(context_beyond),
            )
        )
    return lines


def _runtime_notes(context: Mapping[str, Any], result: EstimateResult) -> list[str]:
    from calculator.result.formatting import gib as fmt_gib
    from calculator.result.formatting import num

    lines: list[str] = []
    started, loaded = result.vllm, result.llama_cpp
    if started is not None:
        lines.append(
            _markdown_text(
                gettext_noop(
                    "vLLM serves %(n)s concurrent requests of %(seq)s tokens: its KV-cache pool holds %(tokens)s tokens."
                ),
                n=num(started.max_concurrency, 2),
                seq=num(started.max_model_len),
                tokens=num(started.kv_cache_tokens),
            )
        )
        if not started.fits:
            lines.append(
                "⚠ "
                + _markdown_text(
                    gettext_noop(
                        "vLLM will not start: one request of this length does not fit in the pool. Shorten --max-model-len or raise --gpu-memory-utilization."
                    )
                )
            )
    elif loaded is not None and result.host_bytes:
        lines.append(
            _markdown_text(
                gettext_noop(
                    "System RAM: %(host)s GiB (%(layers)s of %(all)s layers on the GPU; the rest and the token embeddings stay on the host)."
                ),
                host=fmt_gib(result.host_bytes),
                layers=loaded.gpu_layers,
                all=context["arch"].num_layers + 1,
            )
        )
    return lines


def _host_notes(context: Mapping[str, Any], result: EstimateResult) -> list[str]:
    from calculator.result.formatting import gib as fmt_gib

    lines: list[str] = []
    loaded = result.llama_cpp
    if result.host_bytes and loaded is None:
        lines.append(
            _markdown_text(
                gettext_noop(
                    "System RAM: %(host)s GiB per GPU for what is offloaded; %(total)s GiB for the %(n)s GPU(s) of one machine."
                ),
                host=fmt_gib(result.host_bytes),
                n=context.get("gpus_per_machine"),
                total=fmt_gib(context.get("host_need_bytes") or 0),
            )
        )
    host = context.get("host_verdict")
    if host:
        message = (
            gettext_noop("%(need)s GiB of system RAM needed: fits in your %(have)s GiB.")
            if host["fits"]
            else gettext_noop("%(need)s GiB of system RAM needed: more than your %(have)s GiB.")
        )
        mark = "✔ " if host["fits"] else "✘ "
        lines.append(
            mark
            + _markdown_text(
                message, need=fmt_gib(host["need_bytes"]), have=fmt_gib(host["have_bytes"])
            )
        )
    return lines


def _switches_notes(result: EstimateResult) -> list[str]:
    from calculator.result.formatting import stack_label, switches_summary

    lines: list[str] = []
    switches = result.switches
    if switches is not None:
        line = (
            _markdown_text(
                gettext_noop("As %(stack)s runs it:"), stack=stack_label(switches.training_stack)
            )
            + " "
            + switches_summary(switches)
        )
        if result.peak_stage is not None:
            line += "; " + _markdown_text(
                gettext_noop("the peak is on pipeline stage %(n)s (0 = first)."),
                n=result.peak_stage,
            )
        lines.append(line)
    return lines


def _speed_notes(speed: Any, request: EstimateRequest) -> list[str]:
    """The speed lines of the summary (generation, prompt, training with its time and cost)."""
    from calculator.result.formatting import duration, num

    if not speed:
        return []
    lines = []
    if speed.decode_tokens_per_s:
        line = "⚡ " + _markdown_text(
            gettext_noop("Generation: <strong>%(r)s tokens/s</strong> for one sequence"),
            r=num(speed.decode_tokens_per_s, 0),
        )
        if speed.decode_tokens_per_s_full_context:
            line += "; " + _markdown_text(
                gettext_noop("%(r)s tokens/s with %(n)s tokens in context"),
                r=num(speed.decode_tokens_per_s_full_context, 0),
                n=num(request.seq_len),
            )
        if speed.decode_tokens_per_s_total and request.batch_size > 1:
            line += "; " + _markdown_text(
                gettext_noop("%(r)s tokens/s for %(n)s sequences together"),
                r=num(speed.decode_tokens_per_s_total, 0),
                n=request.batch_size,
            )
        lines.append(line + ".")
    if speed.prefill_tokens_per_s:
        lines.append(
            _markdown_text(
                gettext_noop(
                    "Prompt: %(r)s tokens/s; the first token after %(t)s for a %(n)s-token prompt."
                ),
                r=num(speed.prefill_tokens_per_s, 0),
                t=duration(speed.time_to_first_token_s),
                n=num(speed.prompt_tokens),
            )
        )
    if speed.host_slowdown and speed.host_slowdown > 1.05:
        lines.append(
            "⚠ "
            + _markdown_text(
                gettext_noop(
                    "With layers in system RAM, generation is %(x)s× slower than with every layer on the GPU."
                ),
                x=num(speed.host_slowdown, 1),
            )
        )
    if speed.training_tokens_per_s_per_gpu:
        line = "⚡ " + _markdown_text(
            gettext_noop("Training: <strong>%(r)s tokens/s per GPU</strong>, %(s)s per step"),
            r=num(speed.training_tokens_per_s_per_gpu, 0),
            s=duration(speed.step_time_s),
        )
        if speed.time_to_train_s:
            line += "; " + _markdown_text(
                gettext_noop("the whole run takes %(t)s"), t=duration(speed.time_to_train_s)
            )
            if speed.cost is not None:
                line += " " + _markdown_text(gettext_noop("and costs %(c)s"), c=num(speed.cost, 0))
        lines.append(line + ".")
    return lines


StrOrPromise = str | Promise


@dataclass(frozen=True)
class QualityNote:
    """What a weight or KV-cache format costs in output quality, and where that is measured."""

    level: str  # "none", "small", "moderate", "large"
    text: StrOrPromise
    source: str


QUALITY_SOURCE_INT8 = "Dettmers et al. 2022, LLM.int8() (arXiv:2208.07339) §4"
QUALITY_SOURCE_FP8 = "Micikevicius et al. 2022, FP8 Formats for Deep Learning (arXiv:2209.05433) §4"
QUALITY_SOURCE_LOW_BIT = (
    "Huang et al. 2024, How Good Are Low-bit Quantized LLaMA3 Models? (arXiv:2404.14047) §3"
)
QUALITY_SOURCE_KV = "Hooper et al. 2024, KVQuant (arXiv:2401.18079) §5"

PRECISION_QUALITY: dict[str, QualityNote] = {
    "fp32": QualityNote("none", _("full precision"), ""),
    "bf16": QualityNote("none", _("no loss: the format most models are published in"), ""),
    "fp16": QualityNote("none", _("no loss: the format most models are published in"), ""),
    "fp8": QualityNote(
        "small",
        _("negligible loss: FP8 matches 16-bit results in published tests"),
        QUALITY_SOURCE_FP8,
    ),
    "int8": QualityNote(
        "small",
        _("negligible loss: 8-bit weights match 16-bit results in published tests"),
        QUALITY_SOURCE_INT8,
    ),
    "int4": QualityNote(
        "moderate",
        _("small loss: 4-bit weights stay close to 16-bit on most benchmarks"),
        QUALITY_SOURCE_LOW_BIT,
    ),
    "int2": QualityNote(
        "large",
        _("large loss: 2-bit weights usually break the model's answers"),
        QUALITY_SOURCE_LOW_BIT,
    ),
}
# Formats whose quality cost a suggestion may accept without being asked (not 2-bit).
ACCEPTABLE_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")


QUALITY_SOURCE_OPTIMIZER_8BIT = (
    "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization (arXiv:2110.02861) §4"
)
SEVERITY = ("none", "small", "moderate", "large")
WEIGHT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4, "int2": 2}


@dataclass(frozen=True)
class TrainingSwitch:
    """A training switch a suggestion turns on: the request fields it sets, the permalink keys
    that set them on the page, and what it costs the user."""

    key: str
    label: StrOrPromise
    cost: QualityNote
    fields: tuple[tuple[str, object], ...]
    query: tuple[tuple[str, str], ...]


# Cheapest first: what each costs the person training, not what it saves. Recomputation costs
# compute only; a fused loss is the same loss; offloading costs step time and system RAM; an
# 8-bit optimizer a little quality. Quantized weights (LoRA) and a shorter context come after.
TRAINING_SWITCHES = (
    TrainingSwitch(
        "checkpointing",
        _("gradient checkpointing"),
        QualityNote(
            "none", _("gradient checkpointing: about a third more compute, no quality loss"), ""
        ),
        (("activation_checkpointing", "full"),),
        (("ckpt", "on"), ("act_ckpt", "full")),
    ),
    TrainingSwitch(
        "loss",
        _("fused cross-entropy"),
        QualityNote(
            "none", _("fused cross-entropy: the same loss without the full FP32 logits"), ""
        ),
        (("loss", "fused_linear"),),
        (("loss", "fused_linear"),),
    ),
    TrainingSwitch(
        "activation_offloading",
        _("activation offloading"),
        QualityNote(
            "none", _("activation offloading: layer inputs wait in system RAM, slower steps"), ""
        ),
        (("activation_offloading", True),),
        (("act_offload", "on"),),
    ),
    TrainingSwitch(
        "optimizer_offload",
        _("optimizer offload"),
        QualityNote(
            "none",
            _("optimizer offload: the optimizer step runs on the CPU, in system RAM, much slower"),
            "",
        ),
        (("optimizer_offload", True),),
        (("opt_offload", "on"),),
    ),
    TrainingSwitch(
        "parameter_offload",
        _("parameter offload"),
        QualityNote(
            "none",
            _("parameter offload: the weights wait in system RAM and stream in layer by layer"),
            "",
        ),
        (("parameter_offload", True),),
        (("param_offload", "on"),),
    ),
    TrainingSwitch(
        "optimizer_8bit",
        _("8-bit AdamW"),
        QualityNote(
            "small",
            _("8-bit AdamW: matches 32-bit AdamW in published tests"),
            QUALITY_SOURCE_OPTIMIZER_8BIT,
        ),
        (("optimizer", "adamw_8bit"),),
        (("optimizer", "adamw_8bit"),),
    ),
)


@dataclass(frozen=True)
class Suggestion:
    """A combination of settings that fits, with what it gives up."""

    precision: str | None  # None: the weights stay as chosen (QLoRA's are 4-bit by definition)
    kv_cache_precision: str | None
    seq_len: int
    total_bytes: int
    quality: QualityNote | None
    shortened: bool
    switches: tuple[TrainingSwitch, ...] = ()

    @property
    def costs(self) -> list[QualityNote]:
        """What each change costs, cheapest first."""
        notes = [switch.cost for switch in self.switches]
        if self.quality is not None:
            notes.append(self.quality)
        if self.kv_cache_precision:
            notes.append(QUALITY_KV_8BIT)
        if self.shortened:
            notes.append(QUALITY_SHORTER)
        return notes

    @property
    def level(self) -> str:
        return max((note.level for note in self.costs), key=SEVERITY.index, default="none")

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(note.source for note in self.costs if note.source))

    @property
    def query(self) -> dict[str, str]:
        """The permalink keys that set this combination on the page."""
        changes = {key: value for switch in self.switches for key, value in switch.query}
        if self.precision is not None:
            changes["precision"] = self.precision
            changes["kv"] = self.kv_cache_precision or ""
        changes["seq"] = str(self.seq_len)
        return changes


QUALITY_KV_8BIT = QualityNote(
    "small", _("8-bit KV cache: negligible loss in published tests"), QUALITY_SOURCE_KV
)
QUALITY_SHORTER = QualityNote("moderate", _("shorter context: less text per request"), "")


def best_combination(
    request: EstimateRequest,
    usable_bytes: int,
    max_context: int | None,
    *,
    host_bytes_limit: int | None = None,
) -> Suggestion | None:
    """The least costly combination that fits. Inference: weights at 16, 8 or 4 bits, then an
    8-bit KV cache, at the chosen context; if none fits there, the combination that keeps the
    longest context (its exact longest, found by ``largest_fitting``). Never 2-bit: that is
    offered only as the last resort with its warning. Training: ``training_combination``."""
    if request.mode != "inference":
        return training_combination(
            request, usable_bytes, max_context, host_bytes_limit=host_bytes_limit
        )
    seq = min(request.seq_len, max_context or request.seq_len)
    combinations: list[tuple[str, str | None]] = []
    for precision in ("bf16", "int8", "int4"):
        combinations.append((precision, None))
        combinations.append((precision, "int8"))
    candidates = []
    for precision, kv in combinations:
        try:
            candidates.append(
                (
                    precision,
                    kv,
                    with_changes(
                        request,
                        precision=precision,
                        kv_cache_precision=kv or request.kv_cache_precision,
                        seq_len=seq,
                    ),
                )
            )
        except ValueError:
            continue
    for precision, kv, changed in candidates:
        total = cached_estimate(changed).total_bytes
        if total <= usable_bytes:
            return Suggestion(precision, kv, seq, total, PRECISION_QUALITY[precision], False)
    if not candidates:
        return None
    # Nothing fits at this context: the most compact combination gives the longest one.
    precision, kv, compact = candidates[-1]
    longest = largest_fitting(compact, "seq_len", usable_bytes, seq)
    if not longest:
        return None
    total = cached_estimate(with_changes(compact, seq_len=longest)).total_bytes
    return Suggestion(precision, kv, longest, total, PRECISION_QUALITY[precision], True)


def training_switches(request: EstimateRequest, result: EstimateResult) -> list[TrainingSwitch]:
    """The switches that would lower this run's memory and are not on yet, cheapest first: each
    one the training stack has (``Stack.offloads`` for the offloads; parameter offload for full
    training only, and with DeepSpeed under ZeRO-3, as ``offload_param`` requires)."""
    switches = result.switches
    if switches is None:
        return []
    stack = STACKS[switches.training_stack]
    lora = request.mode in {"lora", "qlora"}
    wanted = []
    for switch in TRAINING_SWITCHES:
        key = switch.key
        if key == "checkpointing" and switches.activation_checkpointing == "full":
            continue
        if key == "loss" and switches.loss != "full":
            continue
        if key in {"activation_offloading", "optimizer_offload", "parameter_offload"}:
            if key not in stack.offloads or getattr(switches, key):
                continue
            if key == "parameter_offload" and (
                lora or (switches.training_stack == "deepspeed" and request.zero_stage != 3)
            ):
                continue
        if key == "optimizer_8bit" and request.optimizer != "adamw":
            continue
        wanted.append(switch)
    return wanted


def training_combination(
    request: EstimateRequest,
    usable_bytes: int,
    max_context: int | None,
    *,
    host_bytes_limit: int | None = None,
) -> Suggestion | None:
    """The least costly combination that fits a training run (issue 25). The changes are ranked
    by what they cost the person training (``TRAINING_SWITCHES``, cheapest first; then, for
    LoRA, weights at 8 and then 4 bits; a shorter context last) and the most costly is avoided
    first: with every cheaper change on, the weights stay as chosen if that fits, else 8-bit,
    else 4-bit; then each switch, from the most costly down, is left off if the run still fits
    without it. So a quantized weight or a shorter context is suggested only when no
    combination of the switches fits, and no switch is on that the others make unneeded.
    QLoRA's weights are 4-bit by definition: never a weight format. ``host_bytes_limit``: the
    system RAM one GPU may use (offloads beyond it do not fit)."""
    seq = min(request.seq_len, max_context or request.seq_len)
    switches = training_switches(request, cached_estimate(request))
    bits = WEIGHT_BITS.get(request.precision, 16)
    formats: list[str | None] = [None]
    if request.mode == "lora":
        formats += [p for p in ("bf16", "int8", "int4") if WEIGHT_BITS[p] < bits]

    def built(on: list[TrainingSwitch], precision: str | None, tokens: int) -> EstimateRequest:
        changes: dict[str, object] = {"seq_len": tokens}
        for switch in on:
            changes.update(switch.fields)
        if precision is not None:
            changes.update(precision=precision, mixed_precision=False)
        return with_changes(request, **changes)

    def total_if_fits(on: list[TrainingSwitch], precision: str | None, tokens: int) -> int | None:
        try:
            estimated = cached_estimate(built(on, precision, tokens))
        except ValueError:  # a setting this run cannot take
            return None
        if estimated.total_bytes > usable_bytes:
            return None
        if host_bytes_limit is not None and estimated.host_bytes > host_bytes_limit:
            return None
        return estimated.total_bytes

    def suggestion(
        on: list[TrainingSwitch], precision: str | None, tokens: int, total: int
    ) -> Suggestion:
        quality = PRECISION_QUALITY[precision] if precision else None
        return Suggestion(precision, None, tokens, total, quality, tokens < seq, tuple(on))

    on = list(switches)
    total = None
    for precision in formats:
        total = total_if_fits(on, precision, seq)
        if total is not None:
            break
    if total is None:
        # Nothing fits at this context: every change on, and the longest context that fits.
        precision = formats[-1]
        try:
            compact = built(on, precision, seq)
        except ValueError:
            return None
        longest = largest_fitting(compact, "seq_len", usable_bytes, seq)
        total = total_if_fits(on, precision, longest) if longest and longest < seq else None
        return suggestion(on, precision, longest, total) if longest and total else None
    for switch in reversed(switches):
        without = [s for s in on if s is not switch]
        lighter = total_if_fits(without, precision, seq)
        if lighter is not None:
            on, total = without, lighter
    if not on and precision is None:
        return None  # the run fits as it is
    return suggestion(on, precision, seq, total)


def context_warning(seq_len: int, max_context: int | None) -> int | None:
    """The model's trained window when the chosen context exceeds it (else None)."""
    if max_context and seq_len > max_context:
        return max_context
    return None


MODE_LABELS = {
    "inference": _("Inference"),
    "full_finetune": _("Full fine-tuning"),
    "lora": _("LoRA"),
    "qlora": _("QLoRA"),
    "pretrain": _("Training from scratch"),
}
ATTENTION_LABELS = {"flash": _("FlashAttention / SDPA"), "eager": _("Eager attention")}
OPTIMIZER_LABELS = {
    "adamw": _("AdamW"),
    "adamw_8bit": _("8-bit AdamW"),
    "sgd": _("SGD"),
    "sgd_momentum": _("SGD with momentum"),
    "adafactor": _("Adafactor"),
    "lion": _("Lion"),
}


def inputs_summary(
    request: EstimateRequest, *, gpu_name: str | None, host_ram_gb: float | None = None
) -> list[tuple[str, str]]:
    """Every input that shaped a result, as (label, value) in the active language: what a saved
    snapshot and the Markdown export show, so a reader knows what was computed."""
    training = request.mode != "inference"
    if request.runtime != "transformers":
        return _runtime_inputs(request, gpu_name=gpu_name, host_ram_gb=host_ram_gb)
    rows: list[tuple[str, str]] = [
        (str(_("Mode")), str(MODE_LABELS[request.mode])),
        (
            str(_("Precision")),
            "NF4" if request.mode == "qlora" else request.precision.upper(),
        ),
        (str(_("Sequence length (tokens)")), _n(request.seq_len)),
        (str(_("Batch size")), _n(request.batch_size)),
        (str(_("Attention kernel")), str(ATTENTION_LABELS[request.attention])),
    ]
    if not training:
        kv = request.kv_cache_precision or compute_dtype_label(request.precision)
        rows.append((str(_("KV-cache precision")), kv.upper()))
    if request.mode in {"full_finetune", "pretrain"}:
        rows.append(
            (str(_("Mixed precision (fp32 master weights)")), _yes_no(request.mixed_precision))
        )
    if training:
        optimizer = OPTIMIZER_LABELS.get(request.optimizer) or _form_choice(
            "optimizer", request.optimizer
        )
        rows.append((str(_("Optimizer")), str(optimizer)))
        rows.append((str(_("Gradient checkpointing")), _yes_no(request.gradient_checkpointing)))
        rows += _stack_inputs(request)
    if request.mode in {"lora", "qlora"}:
        targets = request.lora.targets
        rows.append((str(_("LoRA rank")), _n(request.lora.rank)))
        rows.append(
            (
                str(_("LoRA target modules")),
                str(_("All linear layers")) if targets == "all-linear" else ", ".join(targets),
            )
        )
    rows.append((str(_("Number of GPUs")), _n(request.num_gpus)))
    if request.tensor_parallel > 1:
        rows.append((str(_("Tensor parallel")), _n(request.tensor_parallel)))
    if training and request.zero_stage:
        rows.append((str(_("ZeRO / FSDP stage")), str(request.zero_stage)))
    rows += _speed_inputs(request, host_ram_gb)
    if gpu_name:
        rows.append((str(_("GPU")), gpu_name))
    return rows


# The training stack's switches as the form names them: (request field, form field, values).
_STACK_SWITCHES = (
    ("optimizer_impl", "opt_impl", None),
    ("loss", "loss", None),
    ("activation_checkpointing", "act_ckpt", None),
    ("activation_offloading", "act_offload", {True: "on", False: "off"}),
    ("optimizer_offload", "opt_offload", {True: "on", False: "off"}),
    ("parameter_offload", "param_offload", {True: "on", False: "off"}),
    ("sequence_parallel", "seq_par", {True: "on", False: "off"}),
)


def _form_label(name: str) -> str:
    """The page's label of a form field (the snapshot lists what the visitor filled in)."""
    from calculator.inputs.forms import CalculatorForm

    return str(CalculatorForm.base_fields[name].label)


def _form_choice(name: str, value: str) -> str:
    from calculator.inputs.forms import CalculatorForm

    field = CalculatorForm.base_fields[name]
    return labels(list(getattr(field, "choices", []))).get(value, value)


def _stack_inputs(request: EstimateRequest) -> list[tuple[str, str]]:
    """The training stack, and each switch the visitor set (unset ones are the stack's)."""
    rows = [(_form_label("stack"), _form_choice("stack", request.training_stack))]
    for attribute, name, values in _STACK_SWITCHES:
        value = getattr(request, attribute)
        if value is not None:
            rows.append((_form_label(name), _form_choice(name, values[value] if values else value)))
    if request.pipeline_parallel > 1:
        rows.append((_form_label("pp"), _n(request.pipeline_parallel)))
    if request.context_parallel > 1:
        rows.append((_form_label("cp"), _n(request.context_parallel)))
    if request.micro_batches is not None:
        rows.append((_form_label("micro"), _n(request.micro_batches)))
    return rows


def _figure(value: float) -> str:
    """A number the visitor typed, with as many decimals as it has (up to six)."""
    places = next((p for p in range(7) if round(value, p) == value), 6)
    return decimal(value, places)


def _speed_inputs(request: EstimateRequest, host_ram_gb: float | None) -> list[tuple[str, str]]:
    """The inputs that only the speed, the run's cost and the RAM verdict read."""
    rows: list[tuple[str, str]] = []
    if request.images_per_request is not None and request.runtime == "transformers":
        rows.append((_form_label("images"), _n(request.images_per_request)))
    if request.prompt_tokens is not None and request.mode == "inference":
        rows.append((_form_label("prompt"), _n(request.prompt_tokens)))
    if request.train_tokens is not None and request.mode != "inference":
        rows.append((_form_label("train_b"), _figure(request.train_tokens / 1e9)))
    if request.price_per_gpu_hour is not None:
        rows.append((_form_label("price"), _figure(request.price_per_gpu_hour)))
    if request.host_memory_bandwidth_gb_s is not None and request.runtime == "llama_cpp":
        rows.append((_form_label("ram_bw"), _figure(request.host_memory_bandwidth_gb_s)))
    if host_ram_gb is not None:
        rows.append((_form_label("ram"), _figure(host_ram_gb)))
    return rows


def _runtime_inputs(
    request: EstimateRequest, *, gpu_name: str | None, host_ram_gb: float | None = None
) -> list[tuple[str, str]]:
    """The settings of a serving runtime, under the names its command line uses."""
    from calculator.estimator.core import llama_cpp_options

    rows: list[tuple[str, str]] = [(str(_("Mode")), str(MODE_LABELS[request.mode]))]
    if request.runtime == "llama_cpp":
        options = llama_cpp_options(request)
        rows += [
            (str(_("Runtime")), "llama.cpp"),
            (str(_("GGUF file type")), str(options.gguf_type)),
            ("-c", _n(options.n_ctx)),
            ("-np", _n(options.n_parallel)),
            ("-b / -ub", f"{_n(options.n_batch)} / {_n(options.n_ubatch)}"),
            ("-fa", "on" if options.flash_attention else "off"),
            ("-ctk / -ctv", f"{options.cache_type_k} / {options.cache_type_v}"),
            ("-ngl", str(_("all")) if options.n_gpu_layers is None else _n(options.n_gpu_layers)),
        ]
        if request.num_gpus > 1:
            rows += [(str(_("Number of GPUs")), _n(request.num_gpus)), ("-sm", options.split_mode)]
    elif request.vllm is not None:
        settings = request.vllm
        rows += [
            (str(_("Runtime")), "vLLM"),
            ("--gpu-memory-utilization", str(settings.gpu_memory_utilization)),
            ("--max-model-len", _n(settings.max_model_len) if settings.max_model_len else "—"),
            ("--quantization", settings.quantization or str(_("from the checkpoint"))),
            ("--kv-cache-dtype", settings.kv_cache_dtype),
            ("--tensor-parallel-size", _n(request.tensor_parallel)),
        ]
        if settings.max_num_seqs:
            rows.append(("--max-num-seqs", _n(settings.max_num_seqs)))
        if settings.max_num_batched_tokens:
            rows.append(("--max-num-batched-tokens", _n(settings.max_num_batched_tokens)))
        if settings.enforce_eager:
            rows.append(("--enforce-eager", str(_("yes"))))
        if settings.block_size != 16:
            rows.append(("--block-size", _n(settings.block_size)))
    rows += _speed_inputs(request, host_ram_gb)
    if gpu_name:
        rows.append((str(_("GPU")), gpu_name))
    return rows


def compute_dtype_label(precision: str) -> str:
    return precision if precision in {"fp32", "fp16", "bf16"} else "bf16"


def _yes_no(value: bool) -> str:
    return str(_("yes")) if value else str(_("no"))


def verdict_payload(
    result: EstimateResult,
    verdict: Verdict,
    *,
    gpu_slug: str | None,
    gpu_name: str,
    run: RunVerdict | None = None,
) -> dict[str, object]:
    """The fit verdict as the JSON export, a saved link's export and the API give it: ``fits``
    as the runtime decides (``runtime_verdict``), the headroom against what it needs at start
    (vLLM: its share of the card, not the total); ``runs`` and ``fit_state`` the answer with the
    machine's RAM (``run_verdict``; without RAM given, the card's alone)."""
    run = run or run_verdict(verdict, None)
    return {
        "gpu": gpu_slug or None,
        "gpu_name": gpu_name,
        "usable_bytes": verdict.usable_bytes,
        "fits": verdict.fits,
        "headroom_bytes": verdict.usable_bytes - vllm_start_bytes(result),
        "runs": run.runs,
        "fit_state": run.fit_state,
    }


def result_payload(
    result: EstimateResult,
    *,
    model_name: str,
    preset_slug: str | None,
    hf_repo: str | None,
    model_type: str,
) -> dict[str, object]:
    """The result as the JSON export and the API give it: the estimator's numbers and the model
    it was computed for (``Calculation.payload`` adds the inputs, as a request body)."""
    payload: dict[str, object] = result.model_dump(mode="json")
    payload["model"] = {
        "name": model_name,
        "preset": preset_slug,
        "hf_repo": hf_repo or None,
        "model_type": model_type,
    }
    return payload

"""Turns an estimate into what the page shows: units, shares, chart segments, verdicts, levers.

Functions of the estimator's result and plain values; no queries and no request.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _

from calculator.estimator import Architecture, EstimateRequest, EstimateResult, estimate
from calculator.models import GpuSpec

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


def breakdown_rows(
    result: EstimateResult,
    request: EstimateRequest | None = None,
    arch: Architecture | None = None,
) -> list[Row]:
    values = result.breakdown.model_dump()
    total = result.total_bytes or 1
    rows = []
    for key, label, color in COMPONENTS:
        if not values.get(key):
            continue
        explanation = str(EXPLANATIONS[key])
        if request is not None and arch is not None:
            plugged = formula(key, request, result, arch)
            if plugged:
                explanation = f"{explanation} {plugged}"
        rows.append(
            Row(
                key,
                str(label),
                color,
                values[key],
                gib(values[key]),
                100 * values[key] / total,
                explanation,
            )
        )
    return rows


def _n(value: float) -> str:
    return number_format(value, 0, use_l10n=True, force_grouping=True)


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
    if key == "weights" and request.mode in {"inference", "full_finetune", "pretrain", "lora"}:
        return _("= %(params)s parameters × %(bytes)s bytes.") % {
            "params": _n(result.params_total),
            "bytes": bytes_of.get(request.precision, "2"),
        }
    if key == "kv_cache":
        return _(
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
            return _("= %(batch)s × %(vocab)s vocabulary entries, last position only.") % {
                "batch": request.batch_size,
                "vocab": _n(arch.vocab_size),
            }
        return _(
            "= %(tokens)s tokens × %(vocab)s vocabulary entries × 4 bytes, up to three at once."
        ) % {
            "tokens": _n(tokens),
            "vocab": _n(arch.vocab_size),
        }
    if key in {"gradients", "optimizer_states"} and result.params_trainable:
        return _("%(params)s trained parameters.") % {"params": _n(result.params_trainable)}
    if key == "master_weights":
        return _("= %(params)s parameters × 4 bytes.") % {"params": _n(result.params_total)}
    if key == "adapters":
        return _("= %(params)s parameters × 4 bytes.") % {"params": _n(result.params_trainable)}
    if key == "activations":
        return _("%(tokens)s tokens × %(layers)s layers, hidden size %(hidden)s.") % {
            "tokens": _n(tokens),
            "layers": arch.num_layers,
            "hidden": _n(arch.hidden_size),
        }
    return ""


@dataclass(frozen=True)
class Segment:
    label: str
    color: str
    x: float
    width: float
    gib: float


def chart_segments(rows: list[Row], scale_bytes: int, width: float = 1000.0) -> list[Segment]:
    """Horizontal stacked bar: each component's share of ``scale_bytes`` as SVG x/width."""
    segments = []
    x = 0.0
    for row in rows:
        w = width * row.bytes / scale_bytes if scale_bytes else 0.0
        segments.append(Segment(row.label, row.color, x, w, row.gib))
        x += w
    return segments


@dataclass(frozen=True)
class Verdict:
    fits: bool
    usable_gib: float
    nominal_gib: float
    headroom_percent: float
    shortfall_gib: float


def verdict(total_bytes: int, usable_bytes: int, nominal_bytes: int) -> Verdict:
    fits = total_bytes <= usable_bytes
    headroom = 100 * (usable_bytes - total_bytes) / usable_bytes if usable_bytes else 0.0
    return Verdict(
        fits,
        gib(usable_bytes),
        gib(nominal_bytes),
        headroom,
        gib(max(0, total_bytes - usable_bytes)),
    )


_ESTIMATES: dict[tuple[str, str], EstimateResult] = {}
_ESTIMATE_CACHE_SIZE = 20_000


def cached_estimate(request: EstimateRequest) -> EstimateResult:
    """Identical requests (the same permalink, the same search step) are computed once per
    process. The key is the model's stable hash plus the small workload fields."""
    key = (request.model.cache_key(), request.model_dump_json(exclude={"model"}))
    result = _ESTIMATES.get(key)
    if result is None:
        if len(_ESTIMATES) >= _ESTIMATE_CACHE_SIZE:
            _ESTIMATES.clear()
        result = _ESTIMATES[key] = estimate(request)
    return result


def with_changes(request: EstimateRequest, **changes: object) -> EstimateRequest:
    """The same request with some workload fields changed, keeping the model description (and
    its parsed architecture). Validated like any request."""
    fields = request.model_dump(exclude={"model"})
    changed = EstimateRequest.model_validate({**fields, **changes, "model": {"config": {}}})
    return changed.model_copy(update={"model": request.model})


SHARDING_STEPS = (1, 2, 4, 8, 16, 32, 64)


def sharded_totals(request: EstimateRequest) -> dict[int, int]:
    """Per-GPU total when the job is spread over n GPUs: tensor parallel for inference, ZeRO-3
    for training (the usual way to fit a model that is too big for one card)."""
    totals = {}
    for n in SHARDING_STEPS:
        if request.mode == "inference":
            changed = with_changes(request, num_gpus=n, tensor_parallel=n, zero_stage=0)
        else:
            changed = with_changes(
                request,
                num_gpus=n,
                tensor_parallel=1,
                zero_stage=3 if n > 1 else request.zero_stage,
            )
        try:
            totals[n] = cached_estimate(changed).total_bytes
        except ValueError:
            continue
    return totals


def largest_fitting(
    request: EstimateRequest, field: str, usable_bytes: int, upper: int
) -> int | None:
    """The largest value of an integer field (batch, context) that still fits: a monotone
    search that starts from the current value (galloping, then bisection)."""

    def fits(value: int) -> bool:
        return cached_estimate(with_changes(request, **{field: value})).total_bytes <= usable_bytes

    start = max(1, min(int(getattr(request, field)), upper))
    if fits(start):
        low, high = start, start * 2
        while high <= upper and fits(high):
            low, high = high, high * 2
        high = min(high, upper + 1)
    else:
        if start == 1 or not fits(1):
            return None
        low, high = start // 2, start
        while low > 1 and not fits(low):
            low, high = low // 2, low
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


PRECISION_ORDER = ("fp32", "bf16", "fp8", "int8", "int4", "int2")


def highest_fitting_precision(request: EstimateRequest, usable_bytes: int) -> str | None:
    """The most precise weight format that fits (inference and LoRA accept them all)."""
    allowed = PRECISION_ORDER if request.mode in {"inference", "lora"} else ("fp32", "bf16")
    for precision in allowed:
        try:
            changed = with_changes(request, precision=precision, mixed_precision=False)
        except ValueError:
            continue
        if cached_estimate(changed).total_bytes <= usable_bytes:
            return precision
    return None


@dataclass(frozen=True)
class GpuGroup:
    """GPUs that need the same number of cards (so the same memory per card)."""

    count: int | None
    per_gpu_bytes: int | None
    gpus: list[GpuSpec]


def gpu_fits(gpus: list[GpuSpec], totals: dict[int, int]) -> list[GpuGroup]:
    """Catalogue GPUs grouped by how many of them hold the job, fewest first, smallest card first."""
    groups: dict[int | None, list[GpuSpec]] = {}
    for gpu in gpus:
        needed = next((n for n, total in sorted(totals.items()) if total <= gpu.usable_bytes), None)
        groups.setdefault(needed, []).append(gpu)
    ordered = sorted(groups.items(), key=lambda item: item[0] or 10**6)
    return [
        GpuGroup(
            count,
            totals[count] if count else None,
            sorted(members, key=lambda gpu: (float(gpu.memory_gb), gpu.name)),
        )
        for count, members in ordered
    ]


def markdown(
    result: EstimateResult,
    rows: list[Row],
    *,
    title: str,
    gpu_name: str | None,
    verdict: Verdict | None,
    link: str,
) -> str:
    """A Markdown summary to paste into an issue or a notebook."""
    lines = [
        f"### {title}: {gib(result.total_bytes):.2f} GiB per GPU",
        "",
        f"| {_('Component')} | GiB | % |",
        "|---|---:|---:|",
        *[f"| {row.label} | {row.gib:.2f} | {row.share:.1f} |" for row in rows],
        f"| **{_('Total')}** | **{gib(result.total_bytes):.2f}** | 100 |",
        "",
        f"{_('Peak allocated')}: {gib(result.peak_allocated_bytes):.2f} GiB ({result.peak_phase}).",
    ]
    if verdict is not None and gpu_name:
        state = _("fits") if verdict.fits else _("does not fit")
        lines.append(f"{gpu_name}: {state} ({verdict.usable_gib:.2f} GiB usable).")
    lines += ["", link, ""]
    return "\n".join(lines)

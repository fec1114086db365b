"""'What fits in my VRAM': the tier table and the per-GPU model list, by searching the estimator.

Nothing here is a second formula: every answer is a monotone search (bisection) over the
estimator's own result — more parameters or a longer context never need less memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from calculator.estimator import ConfigModel, EstimateRequest, estimate
from calculator.estimator.precision import BYTES_PER_ELEMENT
from calculator.models import DEFAULT_USABLE_FRACTION, ModelPreset
from calculator.presenters import largest_fitting

TIERS_GB = (16, 24, 48, 80, 96, 128, 160, 192, 256, 320, 384, 512)
PRECISIONS_BY_MODE = {
    "inference": ("fp32", "bf16", "int8", "int4", "int2"),
    "lora": ("fp32", "bf16", "int8", "int4", "int2"),
    "qlora": ("nf4",),
    "full_finetune": ("fp32", "bf16", "mixed"),
}
NAIVE_BYTES = {
    "fp32": 4.0,
    "bf16": 2.0,
    "int8": 1.0,
    "int4": 0.5,
    "int2": 0.25,
    "nf4": 0.5,
    "mixed": 2.0,
}
# Modern checkpoints use grouped-query attention with 8 KV heads (Llama 3, Qwen 2.5, Mistral).
TIER_KV_HEADS = 8


@dataclass(frozen=True)
class Workload:
    mode: str
    seq_len: int
    batch_size: int

    def request(
        self, model: dict[str, Any] | ConfigModel, precision: str, **extra: Any
    ) -> EstimateRequest:
        fields: dict[str, Any] = {
            "model": model,
            "mode": self.mode,
            "seq_len": self.seq_len,
            "batch_size": self.batch_size,
            "kv_cache_precision": "bf16" if self.mode == "inference" else None,
            **extra,
        }
        if precision == "mixed":
            fields.update(precision="bf16", mixed_precision=True)
        elif precision == "nf4":
            fields["precision"] = "bf16"
        else:
            fields["precision"] = precision
        return EstimateRequest.model_validate(fields)


def _descriptions(presets: list[ModelPreset]) -> dict[int, ConfigModel]:
    """One model description per preset, so each config is parsed once for all precisions."""
    return {preset.pk: ConfigModel(config=preset.config) for preset in presets}


def tier_usable_bytes(gb: float) -> int:
    """Usable memory of a card marketed as ``gb`` GB (the catalogue's default share)."""
    return int(Decimal(gb) * (1 << 30) * DEFAULT_USABLE_FRACTION)


def total_for_params(workload: Workload, precision: str, params_billion: float) -> int:
    model = {"params_billion": params_billion, "num_kv_heads": TIER_KV_HEADS}
    return estimate(workload.request(model, precision)).total_bytes


def largest_params_billion(workload: Workload, precision: str, usable_bytes: int) -> float:
    """Bisection on a log scale: the largest model (in billions) whose total fits."""
    low, high = 0.01, 20_000.0
    if total_for_params(workload, precision, low) > usable_bytes:
        return 0.0
    for _ in range(26):  # 2^26 steps of the log range: better than 0.1% resolution
        middle = math.sqrt(low * high)
        if total_for_params(workload, precision, middle) <= usable_bytes:
            low = middle
        else:
            high = middle
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


def preset_totals(
    workload: Workload, presets: list[ModelPreset], precisions: tuple[str, ...]
) -> dict[str, list[tuple[ModelPreset, int]]]:
    """Each catalogue model's total at each precision, computed once for the whole table."""
    totals: dict[str, list[tuple[ModelPreset, int]]] = {}
    models = _descriptions(presets)
    for precision in precisions:
        rows = []
        for preset in presets:
            request = workload.request(models[preset.pk], precision)
            rows.append((preset, estimate(request).total_bytes))
        totals[precision] = sorted(rows, key=lambda row: -row[0].params_total)
    return totals


def tier_table(workload: Workload, presets: list[ModelPreset]) -> list[TierRow]:
    precisions = PRECISIONS_BY_MODE[workload.mode]
    totals = preset_totals(workload, presets, precisions)
    table = []
    for gb in TIERS_GB:
        usable = tier_usable_bytes(gb)
        cells = []
        for precision in precisions:
            honest = largest_params_billion(workload, precision, usable)
            # Examples larger than the reference shape fit because they need less memory per
            # parameter beside the weights (fewer KV heads or layers, sliding windows); they
            # are marked, so the headline never silently contradicts them.
            fitting = [
                Example(p, t, above_headline=p.params_total > honest * 1e9)
                for p, t in totals[precision]
                if t <= usable
            ][:3]
            cells.append(
                Cell(
                    precision=precision,
                    honest_billion=honest,
                    naive_billion=naive_billion(gb, precision),
                    examples=fitting,
                )
            )
        table.append(TierRow(gb, usable, cells))
    return table


@dataclass(frozen=True)
class ModelFit:
    preset: ModelPreset
    precision: str
    max_context: int
    total_bytes: int


def models_that_fit(
    workload: Workload, presets: list[ModelPreset], usable_bytes: int, gpu_count: int
) -> list[ModelFit]:
    """Every catalogue model that fits: its most precise format and the longest context."""
    extra: dict[str, Any] = {"num_gpus": gpu_count}
    if gpu_count > 1:
        extra.update(
            tensor_parallel=gpu_count if workload.mode == "inference" else 1,
            zero_stage=0 if workload.mode == "inference" else 3,
        )
    fits = []
    models = _descriptions(presets)
    for preset in presets:
        for precision in PRECISIONS_BY_MODE[workload.mode]:
            request = workload.request(models[preset.pk], precision, **extra)
            result = estimate(request)
            if result.total_bytes <= usable_bytes:
                limit = preset.max_context or 131_072
                context = largest_fitting(request, "seq_len", usable_bytes, limit) or 0
                fits.append(ModelFit(preset, precision, context, result.total_bytes))
                break
    # 2-bit fits go last: they run, but with a large loss of quality (see PRECISION_QUALITY).
    return sorted(fits, key=lambda fit: (fit.precision == "int2", -fit.preset.params_total))


def naive_billion(gb: float, precision: str) -> float:
    """What simple tables print: all of the card's memory (GB as marketed, which GPU vendors
    count in GiB) divided by bytes per parameter."""
    bytes_per_param = NAIVE_BYTES.get(precision, BYTES_PER_ELEMENT.get(precision, 2.0))
    return gb * (1 << 30) / bytes_per_param / 1e9


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
    GPU (or the memory amount) chosen here."""
    from urllib.parse import urlencode

    params: dict[str, Any] = {
        "model": preset.display_name,
        "mode": workload.mode,
        "seq": workload.seq_len,
        "batch": workload.batch_size,
        "precision": "bf16" if precision in {"mixed", "nf4"} else precision,
    }
    if precision == "mixed":
        params["mixed"] = "on"
    if workload.mode == "inference":
        params["kv"] = "bf16"
    if gpu_slug:
        params["gpu"] = gpu_slug
    elif vram_gb:
        params["vram"] = f"{vram_gb:g}"
    if gpus > 1:
        params["gpus"] = gpus
        if workload.mode == "inference":
            params["tp"] = gpus
        else:
            params["zero"] = 3
    return urlencode(params)

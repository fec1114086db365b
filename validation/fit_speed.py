"""Fit the speed estimator's efficiency factors and report its error on held-out rows.

    .venv/bin/python -m validation.fit_speed          # fit on the training split, print both

Rows: validation/published/speed_llama_bench.json, speed_serving.json, speed_training.json (each
row cites its source). The split is deterministic: a row is held out when the SHA-256 of its id,
read as an integer, is divisible by 3 (about a third), so adding a row never moves the others.
The fit is a grid search that minimises the median |log(predicted / published)| over the
training rows of each group; paste the printed factors into ``speed.FITTED``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from calculator.estimator import ConfigModel, EstimateRequest, estimate
from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes import LlamaCppOptions, estimate_llama_cpp
from calculator.estimator.speed import (
    FITTED,
    Efficiency,
    GpuPerformance,
    estimate_speed,
    static_batch_seconds,
)
from validation.runtime_logs import PUBLISHED, preset_configs

CATALOGUE = Path(__file__).resolve().parent.parent / "presets" / "gpus.json"
BACKENDS = {"CUDA": "cuda", "Metal": "metal", "ROCm": "rocm", "Vulkan": "vulkan"}


def held_out(row_id: str) -> bool:
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 3 == 0


@cache
def catalogue() -> dict[str, dict[str, Any]]:
    return {gpu["slug"]: gpu for gpu in json.loads(CATALOGUE.read_text())["gpus"]}


def gpu_performance(
    slug: str, count: int = 1, spec: dict[str, Any] | None = None
) -> GpuPerformance:
    entry = dict(catalogue()[slug])
    entry.update({k: v for k, v in (spec or {}).items() if k != "why"})
    return GpuPerformance(
        bandwidth_gb_s=float(entry["bandwidth_gb_s"]),
        bf16_tflops=entry.get("bf16_tflops_dense") or entry.get("bf16_tflops"),
        fp16_tflops=entry.get("fp16_tflops_dense") or entry.get("bf16_tflops"),
        fp8_tflops=entry.get("fp8_tflops_dense"),
        int8_tops=entry.get("int8_tops_dense"),
        interconnect=entry.get("interconnect") or "pcie",
        interconnect_gb_s=entry.get("interconnect_gb_s"),
        count=count,
        unified_memory=bool(entry.get("unified_memory")),
        vendor=entry["vendor"]
        if entry["vendor"] in {"nvidia", "amd", "intel", "apple"}
        else "other",
    )


@cache
def architecture(slug: str) -> Architecture:
    return Architecture.from_hf_config(preset_configs()[slug])


def request_for(slug: str, **fields: Any) -> EstimateRequest:
    return EstimateRequest.model_validate({"model": {"config": preset_configs()[slug]}, **fields})


@dataclass(frozen=True)
class Case:
    """One published figure and how to predict it from a set of factors."""

    id: str
    group: str
    metric: str
    published: float
    source: str
    predict: Callable[[Efficiency], float | None]

    @property
    def held_out(self) -> bool:
        return held_out(f"{self.id}:{self.metric}")


def llama_cases() -> Iterable[Case]:
    rows = json.loads((PUBLISHED / "speed_llama_bench.json").read_text())["rows"]
    for row in rows:
        backend = BACKENDS[row["backend"]]
        gpu = gpu_performance(row["gpu"], row["count"])
        arch = architecture(row["model"])
        n_ctx = max(row["tg_tokens"], row["pp_tokens"]) + 256
        options = LlamaCppOptions(gguf_type=row["gguf_type"], n_ctx=n_ctx, n_parallel=1)
        lcpp = estimate_llama_cpp(arch, options)
        request = request_for(row["model"], precision="bf16", seq_len=row["tg_tokens"])
        result = estimate(request)
        group = f"llama_cpp/{backend}"

        def speed(eff: Efficiency, row: dict[str, Any] = row, **kw: Any) -> Any:
            return estimate_speed(
                arch,
                kw["request"],
                kw["result"],
                kw["gpu"],
                runtime="llama_cpp",
                llama_cpp=kw["lcpp"],
                prompt_tokens=row["pp_tokens"],
                concurrency=1,
                efficiency=eff,
            )

        bound = {"request": request, "result": result, "gpu": gpu, "lcpp": lcpp}
        if row.get("tg_tokens_per_s"):
            yield Case(
                row["id"],
                group,
                "tg",
                row["tg_tokens_per_s"],
                row["source"],
                lambda eff, b=bound, f=speed: f(eff, **b).decode_tokens_per_s_total,
            )
        if row.get("pp_tokens_per_s"):
            yield Case(
                row["id"],
                group,
                "pp",
                row["pp_tokens_per_s"],
                row["source"],
                lambda eff, b=bound, f=speed: f(eff, **b).prefill_tokens_per_s,
            )


def serving_cases() -> Iterable[Case]:
    data = json.loads((PUBLISHED / "speed_serving.json").read_text())
    for row in data["rows"]:
        gpu = gpu_performance(row["gpu"], row["tensor_parallel"])
        arch = architecture(row["model"])
        request = request_for(
            row["model"],
            precision=row["precision"],
            kv_cache_precision=row["precision"],
            batch_size=row["batch_size"],
            seq_len=row["input_tokens"] + row["output_tokens"],
            num_gpus=row["tensor_parallel"],
            tensor_parallel=row["tensor_parallel"],
        )
        result = estimate(request)

        def throughput(eff: Efficiency, row: dict[str, Any] = row, **kw: Any) -> float:
            seconds = static_batch_seconds(
                arch,
                kw["request"],
                kw["result"],
                kw["gpu"],
                input_tokens=row["input_tokens"],
                output_tokens=row["output_tokens"],
                efficiency=eff,
            )
            tokens = row["batch_size"] * row["output_tokens"]
            return float(tokens / seconds / row["tensor_parallel"])

        bound = {"request": request, "result": result, "gpu": gpu}
        yield Case(
            row["id"],
            "serving/cuda",
            "throughput",
            row["output_tokens_per_s_per_gpu"],
            row["source"],
            lambda eff, b=bound, f=throughput: f(eff, **b),
        )
    for row in data["latency_rows"]:
        gpu = gpu_performance(row["gpu"], row["tensor_parallel"])
        arch = architecture(row["model"])
        request = request_for(
            row["model"],
            precision=row["precision"],
            seq_len=row["input_tokens"],
            num_gpus=row["tensor_parallel"],
            tensor_parallel=row["tensor_parallel"],
        )
        result = estimate(request)
        bound = {"request": request, "result": result, "gpu": gpu}

        def ttft(eff: Efficiency, **kw: Any) -> float | None:
            speed = estimate_speed(
                arch, kw["request"], kw["result"], kw["gpu"], runtime="vllm", efficiency=eff
            )
            return speed.time_to_first_token_s

        yield Case(
            row["id"],
            "serving/cuda",
            "ttft",
            row["time_to_first_token_s"],
            row["source"],
            lambda eff, b=bound, f=ttft: f(eff, **b),
        )


def training_cases() -> Iterable[Case]:
    for row in json.loads((PUBLISHED / "speed_training.json").read_text())["rows"]:
        if row["precision"] != "bf16":
            continue
        gpu = gpu_performance(row["gpu"], row["num_gpus"], row.get("gpu_spec"))
        arch = architecture(row["model"])
        request = request_for(
            row["model"],
            mode="pretrain",
            precision="bf16",
            batch_size=row["batch_size"],
            seq_len=row["seq_len"],
            num_gpus=row["num_gpus"],
            zero_stage=3,
            gradient_checkpointing=row["activation_checkpointing"] == "full",
        )
        result = estimate(request)
        bound = {"request": request, "result": result, "gpu": gpu}

        def tps(eff: Efficiency, **kw: Any) -> float | None:
            speed = estimate_speed(arch, kw["request"], kw["result"], kw["gpu"], efficiency=eff)
            return speed.training_tokens_per_s_per_gpu

        yield Case(
            row["id"],
            "training/cuda",
            "tokens_per_s_per_gpu",
            row["tokens_per_s_per_gpu"],
            row["source"],
            lambda eff, b=bound, f=tps: f(eff, **b),
        )


def all_cases() -> list[Case]:
    return [*llama_cases(), *serving_cases(), *training_cases()]


def factors_for(group: str) -> Efficiency:
    runtime, backend = group.split("/")
    return FITTED.get((runtime, backend)) or FITTED[(runtime, "cuda")]


def relative_error(case: Case, eff: Efficiency) -> float | None:
    """(predicted - published) / published; for latency the same on its inverse (a rate), so
    every metric reads as 'how far off the speed is'."""
    predicted = case.predict(eff)
    if predicted is None:
        return None
    if case.metric == "ttft":
        return case.published / predicted - 1
    return predicted / case.published - 1


def _loss(cases: list[Case], eff: Efficiency) -> float:
    errors = [relative_error(case, eff) for case in cases]
    logs = [abs(math.log1p(error)) for error in errors if error is not None and error > -1]
    return statistics.median(logs) if logs else math.inf


GRIDS: dict[str, dict[str, list[float]]] = {
    "tg": {
        "decode_bandwidth": [x / 100 for x in range(30, 101, 2)],
        "step_overhead_s": [x / 10_000 for x in range(0, 31, 2)],
    },
    "pp": {"prefill_compute": [x / 100 for x in range(4, 101, 2)]},
    "ttft": {"prefill_compute": [x / 100 for x in range(4, 101, 2)]},
    "throughput": {
        "decode_bandwidth": [x / 100 for x in range(30, 101, 5)],
        "step_overhead_s": [x / 10_000 for x in range(0, 51, 5)],
    },
    "tokens_per_s_per_gpu": {"training_flops": [x / 100 for x in range(10, 101, 1)]},
}


def fit(cases: list[Case]) -> dict[str, Efficiency]:
    """Grid search per group and metric, on training rows only, metric by metric in the order
    of GRIDS (decode factors before the throughput rows that also depend on prefill)."""
    fitted: dict[str, Efficiency] = {}
    for group in sorted({case.group for case in cases}):
        eff = factors_for(group)
        for metric, grid in GRIDS.items():
            train = [c for c in cases if c.group == group and c.metric == metric and not c.held_out]
            if not train:
                continue
            names = list(grid)
            best = min(
                itertools.product(*grid.values()),
                key=lambda values: _loss(
                    train, eff.model_copy(update=dict(zip(names, values, strict=True)))
                ),
            )
            eff = eff.model_copy(update=dict(zip(names, best, strict=True)))
        fitted[group] = eff
    return fitted


def report(cases: list[Case], factors: dict[str, Efficiency]) -> list[dict[str, Any]]:
    table = []
    for case in cases:
        error = relative_error(case, factors.get(case.group) or factors_for(case.group))
        table.append(
            {
                "id": case.id,
                "group": case.group,
                "metric": case.metric,
                "split": "held-out" if case.held_out else "train",
                "published": case.published,
                "error": error,
            }
        )
    return table


def summary(table: list[dict[str, Any]], split: str = "held-out") -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    keys = sorted({(row["group"], row["metric"]) for row in table})
    for key in keys:
        errors = [
            abs(row["error"])
            for row in table
            if (row["group"], row["metric"]) == key
            and row["split"] == split
            and row["error"] is not None
        ]
        if errors:
            worst = max(
                (
                    r
                    for r in table
                    if (r["group"], r["metric"]) == key
                    and r["split"] == split
                    and r["error"] is not None
                ),
                key=lambda r: abs(r["error"]),
            )
            out[key] = (len(errors), statistics.median(errors), worst["error"], worst["id"])
    return out


def main() -> None:
    cases = all_cases()
    factors = fit(cases)
    for group, eff in factors.items():
        print(group, eff.model_dump(exclude={"fitted_on"}))
    table = report(cases, factors)
    for split in ("train", "held-out"):
        print(f"\n{split}: group | metric | rows | median |error| | worst (id)")
        for (group, metric), (n, median, worst, worst_id) in summary(table, split).items():
            print(f"{group} | {metric} | {n} | {median:.1%} | {worst:+.1%} ({worst_id})")


if __name__ == "__main__":
    main()

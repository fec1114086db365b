"""Fit the speed estimator's efficiency factors and report its error on held-out rows.

    .venv/bin/python -m validation.fit_speed          # fit on the training split, print both

Rows: validation/published/speed_llama_bench.json, speed_serving.json, speed_training.json (each
row cites its source). The split is deterministic: a row is held out when the SHA-256 of its id,
read as an integer, is divisible by 3 (about a third), so adding a row never moves the others.
The fit is a grid search that minimises the median |log(predicted / published)| over the
training rows of each group; paste the printed factors into ``speed.hardware.FITTED``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from calculator.estimator import EstimateRequest, EstimateResult, estimate
from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes import LlamaCppOptions, LlamaCppResult, estimate_llama_cpp
from calculator.estimator.speed import (
    Efficiency,
    GpuPerformance,
    Runtime,
    efficiency_for,
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
        memory_type=entry.get("memory_type") or "",
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
    """One published figure, and what ``estimate_speed`` needs to predict it."""

    id: str
    group: str
    metric: str
    published: float
    source: str
    arch: Architecture
    request: EstimateRequest
    result: EstimateResult
    gpu: GpuPerformance
    runtime: Runtime = "transformers"
    llama_cpp: LlamaCppResult | None = None
    prompt_tokens: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def held_out(self) -> bool:
        return held_out(f"{self.id}:{self.metric}")

    def predict(self, eff: Efficiency) -> float | None:
        if self.metric == "throughput":
            seconds = static_batch_seconds(
                self.arch,
                self.request,
                self.result,
                self.gpu,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                efficiency=eff,
            )
            tokens = self.request.batch_size * self.output_tokens
            return float(tokens / seconds / self.request.tensor_parallel)
        speed = estimate_speed(
            self.arch,
            self.request,
            self.result,
            self.gpu,
            runtime=self.runtime,
            llama_cpp=self.llama_cpp,
            prompt_tokens=self.prompt_tokens,
            concurrency=1,
            efficiency=eff,
        )
        return {
            "tg": speed.decode_tokens_per_s_total,
            "pp": speed.prefill_tokens_per_s,
            "ttft": speed.time_to_first_token_s,
            "tokens_per_s_per_gpu": speed.training_tokens_per_s_per_gpu,
        }[self.metric]


def llama_cases() -> Iterable[Case]:
    for row in json.loads((PUBLISHED / "speed_llama_bench.json").read_text())["rows"]:
        arch = architecture(row["model"])
        n_ctx = max(row["tg_tokens"], row["pp_tokens"]) + 256
        options = LlamaCppOptions(gguf_type=row["gguf_type"], n_ctx=n_ctx, n_parallel=1)
        request = request_for(row["model"], precision="bf16", seq_len=row["tg_tokens"])
        common = {
            "id": row["id"],
            "group": f"llama_cpp/{BACKENDS[row['backend']]}/{gpu_performance(row['gpu']).memory_class}",
            "source": row["source"],
            "arch": arch,
            "request": request,
            "result": estimate(request),
            "gpu": gpu_performance(row["gpu"], row["count"]),
            "runtime": "llama_cpp",
            "llama_cpp": estimate_llama_cpp(arch, options),
            "prompt_tokens": row["pp_tokens"],
        }
        if row.get("tg_tokens_per_s"):
            yield Case(metric="tg", published=row["tg_tokens_per_s"], **common)
        if row.get("pp_tokens_per_s"):
            yield Case(metric="pp", published=row["pp_tokens_per_s"], **common)


def serving_cases() -> Iterable[Case]:
    data = json.loads((PUBLISHED / "speed_serving.json").read_text())
    for row in data["rows"]:
        gpu = gpu_performance(row["gpu"], row["tensor_parallel"])
        request = request_for(
            row["model"],
            precision=row["precision"],
            kv_cache_precision=row["precision"],
            batch_size=row["batch_size"],
            seq_len=row["input_tokens"] + row["output_tokens"],
            num_gpus=row["tensor_parallel"],
            tensor_parallel=row["tensor_parallel"],
        )
        yield Case(
            id=row["id"],
            group=f"serving/{gpu.backend}/{gpu.memory_class}",
            metric="throughput",
            published=row["output_tokens_per_s_per_gpu"],
            source=row["source"],
            arch=architecture(row["model"]),
            request=request,
            result=estimate(request),
            gpu=gpu,
            runtime="vllm",
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
        )
    for row in data["latency_rows"]:
        gpu = gpu_performance(row["gpu"], row["tensor_parallel"])
        request = request_for(
            row["model"],
            precision=row["precision"],
            seq_len=row["input_tokens"],
            num_gpus=row["tensor_parallel"],
            tensor_parallel=row["tensor_parallel"],
        )
        yield Case(
            id=row["id"],
            group=f"serving/{gpu.backend}/{gpu.memory_class}",
            metric="ttft",
            published=row["time_to_first_token_s"],
            source=row["source"],
            arch=architecture(row["model"]),
            request=request,
            result=estimate(request),
            gpu=gpu,
            runtime="vllm",
        )


def training_cases() -> Iterable[Case]:
    for row in json.loads((PUBLISHED / "speed_training.json").read_text())["rows"]:
        if row["precision"] != "bf16":
            continue
        request = request_for(
            row["model"],
            mode="pretrain",
            precision="bf16",
            batch_size=row["batch_size"],
            seq_len=row["seq_len"],
            num_gpus=row["num_gpus"],
            zero_stage=row.get("zero_stage", 3),
            gradient_checkpointing=row["activation_checkpointing"] == "full",
        )
        yield Case(
            id=row["id"],
            group="training/cuda/hbm",
            metric="tokens_per_s_per_gpu",
            published=row["tokens_per_s_per_gpu"],
            source=row["source"],
            arch=architecture(row["model"]),
            request=request,
            result=estimate(request),
            gpu=gpu_performance(row["gpu"], row["num_gpus"], row.get("gpu_spec")),
        )


def all_cases() -> list[Case]:
    return [*llama_cases(), *serving_cases(), *training_cases()]


def factors_for(group: str) -> Efficiency:
    runtime, backend, memory_class = group.split("/")
    if backend in NOT_FITTED_BACKENDS:
        backend = "cuda"
    return efficiency_for(runtime, backend, memory_class)  # type: ignore[arg-type]


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


# Where a group has no rows for a factor, it keeps this neutral value (and the estimator never
# uses it: no TFLOPS means no prefill estimate). Vulkan rows are not fitted: ``report`` evaluates
# them with the factors of the GPU's own backend (CUDA for NVIDIA, ROCm for AMD), as the
# estimator, which does not know the backend a user builds, would.
START = Efficiency(decode_bandwidth=0.75, prefill_compute=0.5, step_overhead_s=0.001)
NOT_FITTED_BACKENDS = {"vulkan"}

GRIDS: dict[str, dict[str, list[Any]]] = {
    "tg": {
        "decode_bandwidth": [x / 100 for x in range(30, 101, 2)],
        "step_overhead_s": [x / 10_000 for x in range(0, 31, 2)],
    },
    "pp": {
        "prefill_compute": [x / 100 for x in range(10, 101, 5)],
        "compute_ceiling_tflops": [None, *range(40, 401, 20)],
        "quantized_prefill": [x / 100 for x in range(40, 121, 10)],
    },
    "ttft": {"prefill_compute": [x / 100 for x in range(4, 101, 2)]},
    "throughput": {
        "decode_bandwidth": [x / 100 for x in range(30, 101, 5)],
        "step_overhead_s": [x / 10_000 for x in range(0, 51, 5)],
    },
    "tokens_per_s_per_gpu": {
        "training_flops": [x / 100 for x in range(20, 101, 2)],
        "training_traffic": [x / 2 for x in range(0, 41)],
    },
}


def fit(cases: list[Case]) -> dict[str, Efficiency]:
    """Grid search per group and metric, on training rows only, metric by metric in the order
    of GRIDS (decode factors before the throughput rows that also depend on prefill)."""
    fitted: dict[str, Efficiency] = {}
    for group in sorted({case.group for case in cases}):
        if group.split("/")[1] in NOT_FITTED_BACKENDS:
            continue
        eff = START
        for metric, grid in GRIDS.items():
            train = [c for c in cases if c.group == group and c.metric == metric and not c.held_out]
            if not train:
                continue
            if metric == "throughput" and not any(
                c.group == group and c.metric == "ttft" and not c.held_out for c in cases
            ):
                # No time-to-first-token rows fix the compute share, so the batched rows do:
                # at large batches a decode step is compute-bound (2·N FLOPs per sequence).
                grid = {**grid, "prefill_compute": GRIDS["ttft"]["prefill_compute"]}
            names = list(grid)
            if not any(case.predict(eff) is not None for case in train):
                continue
            best = min(
                itertools.product(*grid.values()),
                key=lambda values: _loss(
                    train, eff.model_copy(update=dict(zip(names, values, strict=True)))
                ),
            )
            eff = eff.model_copy(update=dict(zip(names, best, strict=True)))
        counts = {
            metric: sum(
                1
                for c in cases
                if c.group == group
                and c.metric == metric
                and not c.held_out
                and c.predict(eff) is not None
            )
            for metric in GRIDS
        }
        rows = ", ".join(f"{n} {metric}" for metric, n in counts.items() if n)
        fitted[group] = eff.model_copy(
            update={"fitted_on": f"{rows} published rows", "fitted_rows": sum(counts.values())}
        )
    return fitted


def fitted_source(factors: dict[str, Efficiency]) -> str:
    """The ``FITTED`` table as Python, to paste into calculator/estimator/speed/hardware.py."""
    lines = ["FITTED: dict[tuple[str, str], Efficiency] = {"]
    defaults = Efficiency(decode_bandwidth=1, prefill_compute=1, step_overhead_s=0)
    for group, eff in factors.items():
        runtime, backend, memory_class = group.split("/")
        changed = {
            name: value
            for name, value in eff.model_dump().items()
            if value != getattr(defaults, name)
            or name
            in Efficiency.model_fields.keys()
            - {
                "compute_ceiling_tflops",
                "quantized_prefill",
                "training_flops",
                "training_traffic",
                "host_bandwidth",
                "allreduce_latency_s",
                "fitted_rows",
                "fitted_on",
            }
        }
        body = ", ".join(f"{name}={value!r}" for name, value in changed.items())
        lines.append(f'    ("{runtime}", "{backend}/{memory_class}"): Efficiency({body}),')
    lines.append("}")
    return "\n".join(lines)


def report(cases: list[Case], factors: dict[str, Efficiency]) -> list[dict[str, Any]]:
    table = []
    for case in cases:
        # Vulkan rows get the factors of the GPU's own backend (CUDA for NVIDIA, ROCm for AMD),
        # the ones the estimator shows for that GPU.
        group = case.group.replace("/vulkan/", f"/{case.gpu.backend}/")
        error = relative_error(case, factors.get(group) or factors_for(group))
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
    if "--python" in sys.argv:
        print(fitted_source(factors))
    if "-v" in sys.argv:
        for row in table:
            error = "n/a" if row["error"] is None else f"{row['error']:+.1%}"
            print(row["group"], row["metric"], row["split"], row["id"], row["published"], error)
    for split in ("train", "held-out"):
        print(f"\n{split}: group | metric | rows | median |error| | worst (id)")
        for (group, metric), (n, median, worst, worst_id) in summary(table, split).items():
            print(f"{group} | {metric} | {n} | {median:.1%} | {worst:+.1%} ({worst_id})")


if __name__ == "__main__":
    main()

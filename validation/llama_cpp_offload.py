"""Hold the llama.cpp expert-offload estimate to published runs (issue 28).

    .venv/bin/python -m validation.llama_cpp_offload      # the tables for the README

Runs: validation/published/llama_cpp_moe_offload_runs.json and llama_cpp_offload_speed_runs.json
(each run cites its thread or page). A run is compared where its ``compare`` block says what it
implies: the catalogue preset, the llama_cpp options, the GPU (a catalogue slug or its spec) and,
for speed, the peak bandwidth of the machine's system RAM (channels × 8 bytes × transfer rate).

- **VRAM**: the page's figure for the GPU (llama.cpp's model, KV and compute buffers plus the
  CUDA context we assume) against what the user read from nvidia-smi, btop or the like. Nothing is
  fitted to these rows.
- **Weight buffers**: the GPU (and host) model buffer against the printed ``model buffer size``.
- **Generation speed**: decode tokens/s with the routed experts of the CPU layers read from system
  RAM. One factor is fitted, the achieved share of the RAM's peak bandwidth (``host_bandwidth``),
  on the rows whose id hashes to the training split (``fit_speed.held_out``: a third held out);
  the error is reported on the held-out rows.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from dataclasses import dataclass
from functools import cache
from typing import Any

from calculator.estimator import EstimateRequest, EstimateResult, estimate
from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes import LlamaCppOptions, LlamaCppResult, estimate_llama_cpp
from calculator.estimator.speed import Efficiency, GpuPerformance, efficiency_for, estimate_speed
from validation.fit_speed import gpu_performance, held_out
from validation.runtime_logs import PUBLISHED, preset_configs

MIB = 1 << 20
GIB = 1 << 30
FILES = ("llama_cpp_moe_offload_runs.json", "llama_cpp_offload_speed_runs.json")
# Load logs that print every GPU buffer: the expert-offload logs, and the multi-GPU logs of
# llama_cpp_multigpu_logs.json whose experts stay in RAM.
LOG_FILES = ("llama_cpp_offload_logs.json", "llama_cpp_multigpu_logs.json")
BUFFERS = {"model": "model", "kv": "kv", "rs": "recurrent", "compute": "compute"}


@cache
def runs() -> tuple[dict[str, Any], ...]:
    """Every published run that carries a ``compare`` block."""
    found: list[dict[str, Any]] = []
    for name in FILES:
        path = PUBLISHED / name
        if path.exists():
            found += [run for run in json.loads(path.read_text())["runs"] if run.get("compare")]
    return tuple(found)


@cache
def _architecture(slug: str) -> Architecture:
    return Architecture.from_hf_config(preset_configs()[slug])


def _gpu(compare: dict[str, Any]) -> GpuPerformance | None:
    if compare.get("cpu_only"):
        # As the page times a machine with no GPU: the RAM stands in for the device, and with
        # every layer on the CPU only its host term counts (Calculation._cpu_speed).
        return GpuPerformance(bandwidth_gb_s=compare["ram_peak_gb_s"])
    if compare.get("gpu"):
        return gpu_performance(compare["gpu"], compare.get("gpu_count", 1))
    spec = compare.get("gpu_spec")
    if not spec:
        return None
    return GpuPerformance(
        bandwidth_gb_s=spec["bandwidth_gb_s"],
        vendor=spec["vendor"],
        memory_type=spec["memory_type"],
        count=compare.get("gpu_count", 1),
    )


@dataclass(frozen=True)
class Run:
    id: str
    source: str
    compare: dict[str, Any]
    arch: Architecture
    options: LlamaCppOptions
    request: EstimateRequest
    result: EstimateResult
    loaded: LlamaCppResult
    tg: float | None = None  # the published generation tokens/s

    @property
    def held_out(self) -> bool:
        return held_out(f"{self.id}:tg")


def _run(run: dict[str, Any]) -> Run:
    compare = run["compare"]
    options = LlamaCppOptions.model_validate(compare["options"])
    request = EstimateRequest.model_validate(
        {
            "model": {"config": preset_configs()[compare["preset"]]},
            "runtime": "llama_cpp",
            "seq_len": options.n_ctx,
            "batch_size": 1,
            "num_gpus": compare.get("gpu_count", 1),
            "llama_cpp": compare["options"],
        }
    )
    arch = _architecture(compare["preset"])
    return Run(
        id=run["id"],
        source=run["source"],
        compare=compare,
        arch=arch,
        options=options,
        request=request,
        result=estimate(request),
        loaded=estimate_llama_cpp(arch, options, devices=compare.get("gpu_count", 1)),
        tg=float(run["generation_tokens_per_s"]) if run.get("generation_tokens_per_s") else None,
    )


@cache
def compared() -> tuple[Run, ...]:
    return tuple(_run(run) for run in runs())


def _row(run_id: str, figure: str, ours: float, theirs: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": run_id,
        "figure": figure,
        "ours": ours,
        "theirs": theirs,
        "error": ours / theirs - 1,
        **extra,
    }


def vram_rows() -> list[dict[str, Any]]:
    """The page's GPU figure (buffers + CUDA context) against the VRAM the user read."""
    return [
        _row(run.id, "VRAM", run.result.total_bytes / GIB, run.compare["vram_gib"])
        for run in compared()
        if run.compare.get("vram_gib")
    ]


def buffer_rows() -> list[dict[str, Any]]:
    """The model buffers llama.cpp prints, on the GPU and (where given) the host."""
    rows = []
    for run in compared():
        if run.compare.get("gpu_model_buffer_mib"):
            ours = run.loaded.model_buffer.gpu / MIB
            rows.append(_row(run.id, "GPU model buffer", ours, run.compare["gpu_model_buffer_mib"]))
        if run.compare.get("host_model_buffer_mib"):
            ours = run.loaded.model_buffer.host / MIB
            rows.append(
                _row(run.id, "host model buffer", ours, run.compare["host_model_buffer_mib"])
            )
    return rows


def _offloads_experts(options: LlamaCppOptions) -> bool:
    return bool(options.cpu_moe or options.n_cpu_moe or options.override_tensors)


@cache
def printed_logs() -> tuple[dict[str, Any], ...]:
    """Logs with a preset and options, whose experts (some or all) stay in system RAM."""
    found: list[dict[str, Any]] = []
    for name in LOG_FILES:
        path = PUBLISHED / name
        if not path.exists():
            continue
        for log in json.loads(path.read_text())["logs"]:
            if not (log.get("preset") and log.get("options") and log.get("buffers_mib")):
                continue
            if log.get("compare") == []:
                continue  # its entry says why its buffers cannot be compared
            if _offloads_experts(LlamaCppOptions.model_validate(log["options"])):
                found.append(log)
    return tuple(found)


def _gpu_names(log: dict[str, Any]) -> list[str]:
    """The log's GPU devices in order (CUDA0, ROCm0, Vulkan0 ...), host buffers left out."""
    return [
        name
        for name in log["buffers_mib"]
        if not name.startswith(("CPU", "CUDA_Host", "ROCm_Host", "Vulkan_Host", "host"))
    ]


def standard_file(log: dict[str, Any], loaded: LlamaCppResult) -> bool:
    """Whether the log's file is llama-quantize's own mix for its type: its printed size within
    1% of ours. Other quantizers' files of the same name (unsloth's "Q4_K_M" keeps hundreds of
    tensors in Q8_0) put other bytes on each device, so their model buffers are not compared."""
    printed = (log.get("model") or {}).get("file_size_gib")
    if not printed:
        return False
    return abs(loaded.gguf_file_bytes / GIB / float(printed) - 1) <= 0.01


def log_rows() -> list[dict[str, Any]]:
    """Per GPU of a printed log: each buffer it prints, and their sum (the GPU memory llama.cpp
    allocates, which is what expert offload changes), against the estimate's device. The model
    buffer and the sum only for a standard file (``standard_file``)."""
    rows = []
    for log in printed_logs():
        options = LlamaCppOptions.model_validate(log["options"])
        free = log.get("gpu_free_mib")
        if free and len(free) == len(_gpu_names(log)):
            options = options.model_copy(
                update={"device_memory_bytes": tuple(m * MIB for m in free)}
            )
        names = _gpu_names(log)
        loaded = estimate_llama_cpp(_architecture(log["preset"]), options, devices=len(names))
        standard = standard_file(log, loaded)
        for name, device in zip(names, loaded.devices, strict=False):
            printed = log["buffers_mib"][name]
            ours_sum = theirs_sum = 0.0
            for key, field in BUFFERS.items():
                if printed.get(key) is None or not isinstance(printed[key], int | float):
                    continue
                if key == "model" and not standard:
                    continue
                ours = getattr(device, field) / MIB
                ours_sum += ours
                theirs_sum += printed[key]
                if printed[key]:
                    rows.append(_row(log["id"], f"{name} {key}", ours, printed[key]))
            if theirs_sum and standard:
                rows.append(_row(log["id"], f"{name} GPU buffers", ours_sum, theirs_sum))
    return rows


def speed_runs() -> list[Run]:
    return [
        run
        for run in compared()
        if run.compare.get("ram_peak_gb_s") and _gpu(run.compare) and run.tg is not None
    ]


def predict_tg(run: Run, host_bandwidth: float, host_moe_layer_s: float) -> float:
    gpu = _gpu(run.compare)
    assert gpu is not None
    base = efficiency_for("llama_cpp", gpu.backend, gpu.memory_class)
    eff: Efficiency = base.model_copy(
        update={"host_bandwidth": host_bandwidth, "host_moe_layer_s": host_moe_layer_s}
    )
    speed = estimate_speed(
        run.arch,
        run.request,
        run.result,
        gpu,
        runtime="llama_cpp",
        llama_cpp=run.loaded,
        host_memory_bandwidth_gb_s=run.compare["ram_peak_gb_s"],
        concurrency=1,
        efficiency=eff,
    )
    assert speed.decode_tokens_per_s is not None
    return float(speed.decode_tokens_per_s)


BANDWIDTH_GRID = [x / 100 for x in range(30, 101, 1)]
LAYER_GRID = [x / 100_000 for x in range(0, 101, 2)]  # 0 to 1 ms per MoE layer on the CPU


def fit_host_factors(train: list[Run]) -> tuple[float, float]:
    """The achieved share of the RAM's peak and the fixed cost per MoE layer on the CPU that
    minimise the median |log(predicted / published)| over ``train`` (a grid search)."""

    def loss(factors: tuple[float, float]) -> float:
        return statistics.median(
            abs(math.log(predict_tg(run, *factors) / float(run.tg or 1))) for run in train
        )

    return min(itertools.product(BANDWIDTH_GRID, LAYER_GRID), key=loss)


def tg_rows(factors: tuple[float, float]) -> list[dict[str, Any]]:
    return [
        _row(
            run.id,
            "generation tokens/s",
            predict_tg(run, *factors),
            float(run.tg or 0),
            split="held-out" if run.held_out else "train",
        )
        for run in speed_runs()
    ]


def summary(rows: list[dict[str, Any]]) -> tuple[int, float, dict[str, Any] | None]:
    if not rows:
        return 0, 0.0, None
    worst = max(rows, key=lambda row: abs(row["error"]))
    return len(rows), statistics.median(abs(row["error"]) for row in rows), worst


def main() -> None:
    train = [run for run in speed_runs() if not run.held_out]
    share = fit_host_factors(train)
    print(
        f"fitted on {len(train)} training rows: LLAMA_CPP_HOST_BANDWIDTH = {share[0]}, "
        f"LLAMA_CPP_HOST_MOE_LAYER_S = {share[1]}"
    )
    printed = log_rows()
    speed = tg_rows(share)
    tables = {
        "GPU buffers per device (printed logs)": [
            r for r in printed if "GPU buffers" in r["figure"]
        ],
        "model buffer per device (printed logs)": [
            r for r in printed if r["figure"].endswith(" model")
        ],
        "KV buffer per device (printed logs)": [r for r in printed if r["figure"].endswith(" kv")],
        "compute buffer per device (printed logs)": [
            r for r in printed if r["figure"].endswith(" compute")
        ],
        "VRAM (page figure vs the user's reading)": vram_rows(),
        "weight buffers (printed)": buffer_rows(),
        "generation, training split": [r for r in speed if r["split"] == "train"],
        "generation, held out": [r for r in speed if r["split"] == "held-out"],
    }
    print("| figure | runs | median error | worst |")
    print("|---|---:|---:|---:|")
    for name, rows in tables.items():
        n, median, worst = summary(rows)
        worst_text = f"{worst['error']:+.1%} ({worst['id']})" if worst else ""
        print(f"| {name} | {n} | {median:.1%} | {worst_text} |")
    print()
    for rows in tables.values():
        for row in rows:
            print(
                f"{row['id']:48s} {row['figure']:22s} ours {row['ours']:9.3f} "
                f"theirs {row['theirs']:9.3f} {row['error']:+.1%} {row.get('split', '')}"
            )


if __name__ == "__main__":
    main()

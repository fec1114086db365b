"""Compare the runtime estimators with the start-up logs in validation/published/.

Each log entry names its source (a GitHub issue or pull request), the preset whose config.json
describes the model, the settings it ran with and the figures it printed. ``llama_cpp_rows`` and
``vllm_rows`` return one row per compared figure: ours, theirs and the relative error.
Run ``python -m validation.runtime_logs`` for the accuracy tables in validation/README.md.
"""

from __future__ import annotations

import json
import statistics
from functools import cache
from pathlib import Path
from typing import Any

from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes.llama_cpp import (
    LlamaCppOptions,
    estimate_llama_cpp,
    gguf_tensor_types,
    tensor_bytes,
)
from calculator.estimator.runtimes.vllm import VllmOptions, estimate_vllm, kv_bytes_per_token

ROOT = Path(__file__).resolve().parent
PUBLISHED = ROOT / "published"
PRESETS = ROOT.parent / "presets" / "models"
MIB = 1 << 20
GIB = 1 << 30


@cache
def preset_configs() -> dict[str, dict[str, Any]]:
    configs: dict[str, dict[str, Any]] = {}
    for path in sorted(PRESETS.glob("*.json")):
        for preset in json.loads(path.read_text())["presets"]:
            configs[preset["slug"]] = preset["config"]
    return configs


def architecture(slug: str, gguf_arch: str | None = None) -> Architecture:
    arch = Architecture.from_hf_config(preset_configs()[slug])
    if gguf_arch:
        arch = arch.model_copy(update={"model_type": gguf_arch})
    return arch


def load(name: str) -> list[dict[str, Any]]:
    logs: list[dict[str, Any]] = json.loads((PUBLISHED / name).read_text())["logs"]
    return logs


def _row(log: dict[str, Any], buffer: str, ours: float, theirs: float) -> dict[str, Any]:
    return {
        "id": log["id"],
        "source": log["source"],
        "buffer": buffer,
        "ours": ours,
        "theirs": theirs,
        "error": (ours - theirs) / theirs,
        "note": log.get("note", ""),
    }


def _llama_options(settings: dict[str, Any]) -> LlamaCppOptions:
    ngl = settings.get("n_gpu_layers")
    fields: dict[str, Any] = {
        "gguf_type": settings.get("gguf_type") or "Q4_K_M",
        "n_ctx": settings.get("n_ctx") or 4096,
        "n_ubatch": settings.get("n_ubatch") or 512,
        "n_parallel": settings.get("n_parallel") or settings.get("n_seq_max") or 1,
        "flash_attention": bool(settings.get("flash_attn", False)),
        "cache_type_k": settings.get("cache_type_k") or "f16",
        "cache_type_v": settings.get("cache_type_v") or "f16",
        "n_gpu_layers": ngl if isinstance(ngl, int) else None,
    }
    return LlamaCppOptions(**fields)


def llama_cpp_rows() -> list[dict[str, Any]]:
    """Rows for every compared llama.cpp figure, grouped as model / kv / compute buffers."""
    rows = []
    for log in load("llama_cpp_logs.json"):
        arch = architecture(log["model_slug"], log.get("gguf_arch"))
        options = _llama_options(log["settings"])
        result = estimate_llama_cpp(arch, options)
        want = log["compare"]
        if "gguf_file_gib" in want:
            rows.append(
                _row(log, "model: GGUF file", result.gguf_file_bytes / GIB, want["gguf_file_gib"])
            )
        if "bits_per_weight" in want:
            rows.append(
                _row(log, "model: bits per weight", result.bits_per_weight, want["bits_per_weight"])
            )
        if "repeating_layers_gib" in want:
            typed = gguf_tensor_types(arch, options.file_type(arch))
            repeating = sum(tensor_bytes(t, k) for t, k in typed if t.layer is not None)
            rows.append(
                _row(log, "model: repeating layers", repeating / GIB, want["repeating_layers_gib"])
            )
        if "model_buffer_gpu_mib" in want:
            rows.append(
                _row(
                    log,
                    "model: GPU buffer",
                    result.model_buffer.gpu / MIB,
                    want["model_buffer_gpu_mib"],
                )
            )
        if "model_buffer_host_mib" in want:
            rows.append(
                _row(
                    log,
                    "model: host buffer",
                    result.model_buffer.host / MIB,
                    want["model_buffer_host_mib"],
                )
            )
        if "tensor_types" in want:
            for ggml_type, count in want["tensor_types"].items():
                rows.append(
                    _row(
                        log,
                        f"model: {ggml_type} tensors",
                        result.tensor_types.get(ggml_type, 0),
                        count,
                    )
                )
        if "kv_buffer_mib" in want:
            rows.append(
                _row(log, "kv: KV buffer", result.kv_buffer.total / MIB, want["kv_buffer_mib"])
            )
        if "recurrent_buffer_mib" in want:
            rows.append(
                _row(
                    log,
                    "kv: recurrent state",
                    result.recurrent_buffer.total / MIB,
                    want["recurrent_buffer_mib"],
                )
            )
        if "compute_buffer_gpu_mib" in want:
            rows.append(
                _row(
                    log,
                    "compute: GPU",
                    result.compute_buffer.gpu / MIB,
                    want["compute_buffer_gpu_mib"],
                )
            )
        if "compute_buffer_host_mib" in want:
            rows.append(
                _row(
                    log,
                    "compute: host",
                    result.compute_buffer.host / MIB,
                    want["compute_buffer_host_mib"],
                )
            )
    return rows


def _vllm_options(log: dict[str, Any]) -> VllmOptions:
    settings = log["settings"]
    fields: dict[str, Any] = {
        "gpu_memory_bytes": int(log["gpu_total_gib"] * GIB),
        "gpu_memory_utilization": settings.get("gpu_memory_utilization") or 0.9,
        "max_model_len": settings.get("max_model_len"),
        "max_num_seqs": settings.get("max_num_seqs"),
        "max_num_batched_tokens": settings.get("max_num_batched_tokens"),
        "kv_cache_dtype": settings.get("kv_cache_dtype") or "auto",
        "quantization": settings.get("quantization") or "none",
        "tensor_parallel": settings.get("tensor_parallel") or 1,
    }
    return VllmOptions(**fields)


def vllm_rows() -> list[dict[str, Any]]:
    """Rows for every compared vLLM figure: weights, KV memory, KV tokens, per-token size, fits."""
    rows = []
    for log in load("vllm_logs.json"):
        arch = architecture(log["model_slug"])
        options = _vllm_options(log)
        result = estimate_vllm(arch, options)
        want = log["compare"]
        if "weights_gib" in want:
            rows.append(_row(log, "weights", result.weights / GIB, want["weights_gib"]))
        if "kv_cache_gib" in want:
            rows.append(_row(log, "KV cache memory", result.kv_cache / GIB, want["kv_cache_gib"]))
        if "kv_cache_tokens" in want:
            rows.append(
                _row(log, "KV cache tokens", result.kv_cache_tokens, want["kv_cache_tokens"])
            )
        if "kv_tokens_per_gib" in want:
            per_gib = GIB / kv_bytes_per_token(arch, options)
            rows.append(_row(log, "KV tokens per GiB", per_gib, want["kv_tokens_per_gib"]))
        if "fits" in want:
            rows.append(
                {
                    "id": log["id"],
                    "source": log["source"],
                    "buffer": "fits",
                    "ours": float(result.fits),
                    "theirs": float(want["fits"]),
                    "error": 0.0 if result.fits == want["fits"] else 1.0,
                    "note": log.get("note", ""),
                }
            )
    return rows


def summarise(rows: list[dict[str, Any]], group: str) -> dict[str, float]:
    errors = [abs(row["error"]) for row in rows if row["buffer"].startswith(group)]
    return {
        "n": len(errors),
        "median": statistics.median(errors) if errors else 0.0,
        "worst": max(errors) if errors else 0.0,
    }


def _table(rows: list[dict[str, Any]], groups: list[str]) -> str:
    lines = ["| figure | logs compared | median error | worst error |", "|---|---:|---:|---:|"]
    for group in groups:
        stats = summarise(rows, group)
        lines.append(f"| {group} | {stats['n']} | {stats['median']:.1%} | {stats['worst']:.1%} |")
    return "\n".join(lines)


if __name__ == "__main__":
    llama = llama_cpp_rows()
    print(_table(llama, ["model", "kv", "compute"]))
    print()
    vllm = vllm_rows()
    print(
        _table(vllm, ["weights", "KV cache memory", "KV cache tokens", "KV tokens per GiB", "fits"])
    )
    print()
    for row in llama + vllm:
        if abs(row["error"]) > 0.02:
            print(
                f"{row['id']:45s} {row['buffer']:28s} ours {row['ours']:.4g} theirs {row['theirs']:.4g} {row['error']:+.1%}"
            )

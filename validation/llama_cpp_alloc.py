"""The llama.cpp estimate against llama.cpp's own allocation (validation/published/
llama_cpp_alloc.json, measured by validation/llama_cpp/: sparse GGUFs written by llama.cpp's
converter, loaded with ``no_alloc`` by llama.cpp @ 0c1e570's CPU backend).

``rows()`` gives, per case, our and llama.cpp's KV, RS and model buffer bytes. Run
``python -m validation.llama_cpp_alloc`` for the summary tables of the README.
"""

from __future__ import annotations

import json
import statistics
from functools import cache
from pathlib import Path
from typing import Any

from calculator.estimator.architecture import Architecture
from calculator.estimator.runtimes.llama_cpp import LlamaCppOptions, estimate_llama_cpp

ROOT = Path(__file__).resolve().parent
MEASURED = ROOT / "published" / "llama_cpp_alloc.json"
_FILE_TYPES = {"MOSTLY_F16": "F16", "MOSTLY_Q8_0": "Q8_0", "MOSTLY_Q4_K_M": "Q4_K_M"}


def cases() -> list[dict[str, Any]]:
    measured: list[dict[str, Any]] = json.loads(MEASURED.read_text())["cases"]
    return measured


@cache
def _config(source: str) -> dict[str, Any]:
    path, _, slug = source.partition("#")
    data = json.loads((ROOT.parent / path).read_text())
    if not slug:
        return dict(data)
    return next(dict(entry["config"]) for entry in data["presets"] if entry["slug"] == slug)


def architecture(case: dict[str, Any]) -> Architecture:
    return Architecture.from_hf_config(_config(case["config_source"]))


def file_type(case: dict[str, Any]) -> str:
    """Our name for the case's file: its ftype; an MXFP4_MOE file whose other tensors stayed in
    F16 (the converter's gpt-oss output) is our F16 file of gpt-oss, whose experts are MXFP4."""
    gguf = case["gguf"]
    if gguf["file_type"] in _FILE_TYPES:
        return _FILE_TYPES[gguf["file_type"]]
    return "MXFP4" if "Q8_0" in gguf["tensor_type_counts"] else "F16"


def options(case: dict[str, Any]) -> LlamaCppOptions:
    s = case["settings"]
    return LlamaCppOptions(
        gguf_type=file_type(case),  # type: ignore[arg-type]
        n_ctx=s["n_ctx"],
        n_batch=s["n_batch"],
        n_ubatch=s["n_ubatch"],
        n_parallel=s["n_seq_max"],
        flash_attention=s["flash_attn"],
        cache_type_k=s["cache_type_k"],
        cache_type_v=s["cache_type_v"],
        n_gpu_layers=s["n_gpu_layers"],
        swa_full=s["swa_full"],
        kv_unified=s["kv_unified"],
    )


def rows() -> list[dict[str, Any]]:
    """One row per case: ours and llama.cpp's bytes for the KV+RS context, the KV cache, the
    RS buffer and the model buffer (the CPU backend holds everything: ``-ngl 0``)."""
    out = []
    for case in cases():
        result = estimate_llama_cpp(architecture(case), options(case))
        measured = case["measured"]
        out.append(
            {
                "id": case["id"],
                "architecture": case["architecture"],
                "no_mtp": "--no-mtp" in (case["gguf"].get("converter_flags") or []),
                "context": (
                    result.kv_buffer.total + result.recurrent_buffer.total,
                    measured["context_bytes"],
                ),
                "kv": (result.kv_buffer.total, measured["kv_buffer_bytes"]),
                "rs": (result.recurrent_buffer.total, measured["rs_buffer_bytes"]),
                "model": (result.model_buffer.total, measured["model_buffer_bytes"]),
            }
        )
    return out


def error(pair: tuple[int, int]) -> float:
    ours, theirs = pair
    if theirs == 0:
        return 0.0 if ours == 0 else float("inf")
    return (ours - theirs) / theirs


def main() -> None:
    table = rows()
    for part in ("context", "kv", "rs", "model"):
        errors = [abs(error(row[part])) for row in table if row[part][1] or row[part][0]]
        worst = max(table, key=lambda row: abs(error(row[part])))
        print(
            f"{part}: {len(errors)} cases, median {100 * statistics.median(errors):.3f}%, "
            f"worst {100 * abs(error(worst[part])):.3f}% ({worst['id']})"
        )
    by_arch: dict[str, list[dict[str, Any]]] = {}
    for row in table:
        by_arch.setdefault(row["id"].split("/")[0], []).append(row)
    print("\n| case | context worst | model buffer |")
    print("|---|---:|---:|")
    for name, group in by_arch.items():
        context = max(abs(error(row["context"])) for row in group)
        model = max(abs(error(row["model"])) for row in group)
        print(f"| {name} | {100 * context:.3f}% | {100 * model:.2f}% |")


if __name__ == "__main__":
    main()

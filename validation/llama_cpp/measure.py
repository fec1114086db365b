"""Measure what llama.cpp allocates (model, KV, RS, compute buffers) for sparse GGUFs, write the JSON.

For each architecture in ARCHS: make_gguf.py writes a sparse F16/BF16 GGUF from the published
config.json; lcpp_alloc (built by build.sh) loads it with no_alloc and creates a context for
every point of the grid; the memory breakdown and llama.cpp's own log lines are stored.

usage: python measure.py [--only NAME ...]   (writes validation/published/llama_cpp_alloc.json)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT_JSON = REPO / "validation" / "published" / "llama_cpp_alloc.json"
BUILD = Path(os.environ.get("LLAMA_CPP_BUILD", "/tmp/lcp/build"))
GGUF_DIR = Path(os.environ.get("LLAMA_CPP_GGUF_DIR", "/tmp/lcp/gguf"))
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
MIB = 1024 * 1024
CONVERT_ONLY = False

# name -> (config path in the repo, or preset file#slug; has SWA layers)
ARCHS: dict[str, tuple[str, bool]] = {
    "llama-3.1-8b": ("validation/configs/llama-3.1-8b.json", False),
    "qwen3-0.6b": ("validation/configs/qwen3-0.6b.json", False),
    "mistral-7b-v0.1": ("validation/configs/mistral-7b-v0.1.json", True),
    "smollm3-3b": ("validation/configs/preset-smollm3-3b.json", False),
    "qwen3-30b-a3b": ("validation/configs/qwen3-30b-a3b.json", False),
    "mixtral-8x7b-v0.1": ("validation/configs/mixtral-8x7b-v0.1.json", False),
    "gemma-2-9b": ("validation/configs/gemma-2-9b.json", True),
    "gemma-3-4b": ("validation/configs/preset-gemma-3-4b.json", True),
    "gemma-3n-e2b": ("validation/configs/gemma-3n-e2b-text.json", True),
    "gemma-4-26b-a4b": ("presets/models/gemma.json#gemma-4-26b-a4b", True),
    "gemma-4-31b": ("presets/models/gemma.json#gemma-4-31b", True),
    "gpt-oss-20b": ("presets/models/gpt_oss.json#gpt-oss-20b", True),
    "gpt-oss-120b": ("presets/models/gpt_oss.json#gpt-oss-120b", True),
    "deepseek-v2-lite": ("presets/models/deepseek.json#deepseek-v2-lite", False),
    "deepseek-v3.2": ("validation/configs/deepseek-v3.2.json", False),
    "glm-5": ("validation/configs/glm-5.json", False),
    "kimi-k2": ("validation/configs/kimi-k2-text.json", False),
    "glm-4.7-flash": ("validation/configs/preset-glm-4.7-flash.json", False),
    "granite-4.0-h-1b": ("validation/configs/preset-granite-4.0-h-1b.json", False),
    "nemotron-3-nano-30b-a3b": ("validation/configs/nemotron-3-nano-30b-a3b-bf16.json", False),
    "qwen3-next-80b-a3b": ("validation/configs/preset-qwen3-next-80b-a3b.json", False),
    "jamba-1.5-mini": ("validation/configs/preset-jamba-1.5-mini.json", False),
    "falcon-h1-0.5b": ("validation/configs/preset-falcon-h1-0.5b.json", False),
    "lfm2-8b-a1b": ("validation/configs/lfm2-8b-a1b.json", False),
    "qwen3.5-27b": ("validation/configs/qwen3.5-27b.json", False),
    "mamba-130m": ("validation/configs/mamba-130m-hf.json", False),
    "mamba2-780m": ("validation/configs/mamba2-780m.json", False),
    "falcon-mamba-7b": ("validation/configs/falcon-mamba-7b.json", False),
}

# the checkpoint's MTP layer is exported by default, but transformers builds no MTP weights
CONVERTER_FLAGS = {"qwen3-next-80b-a3b": ["--no-mtp"], "qwen3.5-27b": ["--no-mtp"]}

N_CTX = (4096, 32768, 131072)
N_SEQ = (1, 4)
CACHE = ("f16", "q8_0")
N_BATCH, N_UBATCH = 2048, 512
# llama-server at this commit: -np defaults to auto, which becomes 4 slots with kv_unified = true
# (tools/server/server.cpp); we keep kv_unified = true for every point.
KV_UNIFIED = True

_KEEP = re.compile(
    r"model buffer size|KV buffer size|RS buffer size|compute buffer size|llama_kv_cache: size|"
    r"llama_memory_recurrent: size|creating .*KV cache|creating .*cache|llama_context: n_ctx|n_ctx_seq|"
    r"flash_attn|swa_full|kv_unified|n_seq_max|n_batch|n_ubatch|causal_attn|DSV4|indexer|attn_rot"
)
_KV = re.compile(
    r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB"
)
_RS = re.compile(
    r"llama_memory_recurrent: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+) seqs +(\d+) rs_seq\), "
    r"R \((\w+)\): +([\d.]+) MiB, S \((\w+)\): +([\d.]+) MiB, P \((\w+)\): +([\d.]+) MiB"
)
_LABEL = re.compile(r"creating +(.*?) ?cache")


def mib(x: str) -> int:
    return round(float(x) * MIB)


_DROP = re.compile(r"^(create_tensor|llama_graph_n_input_tensors|llama_model_loader|print_info)")


def keep_line(ln: str) -> bool:
    return bool(_KEEP.search(ln)) and not _DROP.search(ln)


def parse_log(log: str) -> tuple[list[str], list[dict], list[dict]]:
    lines = [ln.rstrip() for ln in log.splitlines() if keep_line(ln)]
    kv_caches: list[dict] = []
    rs_caches: list[dict] = []
    label = "kv"
    for ln in log.splitlines():
        if m := _LABEL.search(ln):
            label = m.group(1).strip()
        if m := _KV.search(ln):
            kv_caches.append(
                {
                    "cache": label,
                    "cells": int(m[2]),
                    "layers": int(m[3]),
                    "seqs": int(m[5]),
                    "type_k": m[6],
                    "k_bytes_from_mib": mib(m[7]),
                    "type_v": m[8],
                    "v_bytes_from_mib": mib(m[9]),
                    "size_bytes_from_mib": mib(m[1]),
                }
            )
            label = "kv"
        if m := _RS.search(ln):
            rs_caches.append(
                {
                    "cells": int(m[2]),
                    "layers": int(m[3]),
                    "seqs": int(m[4]),
                    "rs_seq": int(m[5]),
                    "type_r": m[6],
                    "r_bytes_from_mib": mib(m[7]),
                    "type_s": m[8],
                    "s_bytes_from_mib": mib(m[9]),
                    "p_bytes_from_mib": mib(m[11]),
                    "size_bytes_from_mib": mib(m[1]),
                }
            )
    return lines, kv_caches, rs_caches


def run_case(gguf: Path, n_ctx: int, n_seq: int, cache: str, swa_full: bool) -> dict:
    flash = cache != "f16"  # a quantized V cache needs flash attention; f16 runs without it
    cmd = [
        str(BUILD / "lcpp_alloc"),
        str(gguf),
        str(n_ctx),
        str(n_seq),
        str(N_BATCH),
        str(N_UBATCH),
        cache,
        cache,
        str(int(flash)),
        str(int(swa_full)),
        str(int(KV_UNIFIED)),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    settings = {
        "n_ctx": n_ctx,
        "n_seq_max": n_seq,
        "n_batch": N_BATCH,
        "n_ubatch": N_UBATCH,
        "cache_type_k": cache,
        "cache_type_v": cache,
        "flash_attn": flash,
        "swa_full": swa_full,
        "kv_unified": KV_UNIFIED,
        "n_gpu_layers": 0,
    }
    lines, kv_caches, rs_caches = parse_log(p.stderr)
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        res = {"error": f"rc={p.returncode}"}
    if "error" in res:
        tail = [
            ln for ln in p.stderr.splitlines() if "error" in ln.lower() or "failed" in ln.lower()
        ][-5:]
        return {"settings": settings, "error": res["error"], "log_lines": tail}
    rs = sum(c["size_bytes_from_mib"] for c in rs_caches)
    if rs_caches and not kv_caches:
        rs = res["context_bytes"]
    measured = {
        "model_buffer_bytes": res["model_buffer_bytes"],
        "context_bytes": res["context_bytes"],
        "kv_buffer_bytes": res["context_bytes"] - rs,
        "rs_buffer_bytes": rs,
        "compute_buffer_bytes": res["compute_buffer_bytes"],
        "n_ctx": res["n_ctx"],
        "n_ctx_seq": res["n_ctx_seq"],
        "by_buffer_type": res["by_buffer_type"],
        "kv_caches": kv_caches,
        "rs_caches": rs_caches,
    }
    return {"settings": settings, "measured": measured, "log_lines": lines}


def gguf_info(path: Path) -> dict:
    sys.path.insert(
        0,
        str(
            Path(
                os.environ.get("LLAMA_CPP_SRC", "/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp")
            )
            / "gguf-py"
        ),
    )
    import gguf

    r = gguf.GGUFReader(path)
    counts: dict[str, int] = {}
    for t in r.tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    ft = r.fields.get("general.file_type")
    file_type = gguf.LlamaFileType(int(ft.parts[ft.data[0]][0])).name if ft else None
    arch = r.fields["general.architecture"]
    return {
        "file_type": file_type,
        "llama_arch": bytes(arch.parts[arch.data[0]]).decode(),
        "n_tensors": len(r.tensors),
        "tensor_type_counts": counts,
    }


def load_config(cfg_rel: str) -> dict:
    """A config file in the repo, or `presets/models/<family>.json#<slug>` for a preset's `config`."""
    path, _, slug = cfg_rel.partition("#")
    data = json.loads((REPO / path).read_text())
    if slug:
        return next(p for p in data["presets"] if p["slug"] == slug)["config"]
    return data


def measure_arch(name: str, cfg_rel: str, has_swa: bool, outtype: str) -> list[dict]:
    config = load_config(cfg_rel)
    GGUF_DIR.mkdir(parents=True, exist_ok=True)
    cfg_path = GGUF_DIR / f"{name}.config.json"
    cfg_path.write_text(json.dumps(config))
    gguf = GGUF_DIR / f"{name}-{outtype}.gguf"
    if not gguf.exists():
        p = subprocess.run(
            [
                sys.executable,
                str(HERE / "make_gguf.py"),
                str(cfg_path),
                str(gguf),
                "--outtype",
                outtype,
                *CONVERTER_FLAGS.get(name, []),
            ],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            gguf.unlink(missing_ok=True)
            return [
                {
                    "id": f"{name}/convert",
                    "architecture": config.get("model_type"),
                    "config_source": cfg_rel,
                    "error": "conversion failed",
                    "log_lines": p.stderr.strip().splitlines()[-6:],
                }
            ]
    if config.get("model_type") == "gpt_oss":
        # the converter keeps the checkpoint's MXFP4 experts (conversion/gpt_oss.py)
        mx = GGUF_DIR / f"{name}-mxfp4.gguf"
        if not mx.exists():
            subprocess.run(
                [sys.executable, str(HERE / "quant_gguf.py"), str(gguf), str(mx), "MXFP4_EXPERTS"],
                check=True,
            )
        gguf = mx
    info = gguf_info(gguf)
    if name in CONVERTER_FLAGS:
        info["converter_flags"] = CONVERTER_FLAGS[name]
    if CONVERT_ONLY:
        return []
    cases = []
    for n_ctx in N_CTX:
        for n_seq in N_SEQ:
            for cache in CACHE:
                for swa_full in (False, True) if has_swa else (False,):
                    c = run_case(gguf, n_ctx, n_seq, cache, swa_full)
                    cid = f"{name}/{info['file_type']}/ctx{n_ctx}/seq{n_seq}/{cache}" + (
                        "/swa_full" if swa_full else ""
                    )
                    cases.append(
                        {
                            "id": cid,
                            "architecture": config.get("model_type"),
                            "config_source": cfg_rel,
                            "gguf": info,
                            **c,
                        }
                    )
                    if "error" in c:
                        return cases
    if config.get("model_type") == "gpt_oss":
        return cases
    # quantized files: the model buffer is what changes; one context point each
    for qtype in ("Q8_0", "Q4_K_M"):
        q = GGUF_DIR / f"{name}-{qtype.lower()}.gguf"
        if not q.exists():
            p = subprocess.run(
                [sys.executable, str(HERE / "quant_gguf.py"), str(gguf), str(q), qtype],
                capture_output=True,
                text=True,
            )
            if p.returncode != 0:
                q.unlink(missing_ok=True)
                cases.append(
                    {
                        "id": f"{name}/{qtype}",
                        "architecture": config.get("model_type"),
                        "config_source": cfg_rel,
                        "error": "llama-quantize --dry-run failed",
                        "log_lines": p.stderr.strip().splitlines()[-4:],
                    }
                )
                continue
        qinfo = gguf_info(q)
        c = run_case(q, 4096, 1, "f16", False)
        cases.append(
            {
                "id": f"{name}/{qinfo['file_type']}/ctx4096/seq1/f16",
                "architecture": config.get("model_type"),
                "config_source": cfg_rel,
                "gguf": {**qinfo, "tensor_types_from": "llama-quantize --dry-run"},
                **c,
            }
        )
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--convert-only", action="store_true", help="only write the sparse GGUFs")
    a = ap.parse_args()
    global CONVERT_ONLY
    CONVERT_ONLY = a.convert_only
    data = json.loads(OUT_JSON.read_text()) if OUT_JSON.exists() else {"cases": []}
    names = a.only or list(ARCHS)
    keep = [c for c in data["cases"] if c["id"].split("/")[0] not in names]
    for name in names:
        cfg_rel, has_swa = ARCHS[name]
        new = measure_arch(name, cfg_rel, has_swa, "f16")
        print(
            name, len(new), "cases", *[c.get("log_lines") for c in new if "error" in c], flush=True
        )
        keep.extend(new)
    if CONVERT_ONLY:
        return
    data = {
        "about": {
            "llama_cpp_commit": f"ggml-org/llama.cpp@{LLAMA_CPP_COMMIT}",
            "llama_cpp_source": "vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist (PyPI); CHANGELOG names the commit",
            "how_measured": (
                "Sparse GGUFs (metadata and tensor infos, data a hole) written by llama.cpp's convert_hf_to_gguf.py "
                "model classes from the published config.json, with tensor names/shapes from transformers on the meta "
                "device and tokenizer.ggml.model='none'. Loaded with llama_model_params.no_alloc=true (as common/fit.cpp "
                "does), a context created on the CPU backend, sizes read with llama_get_memory_breakdown "
                "(model, context = KV+RS, compute). With no_alloc the KV cache is not allocated; its size is what "
                "ggml_backend_alloc_ctx_tensors_from_buft_size reports. The RS buffer is small and really allocated. "
                "Per-cache K/V/R/S figures come from llama.cpp's log lines, which print MiB with 2 decimals, so those "
                "*_from_mib fields are rounded to 0.01 MiB; model/context/compute bytes are exact. rs_buffer_bytes is "
                "from the log for hybrid models (exact for pure SSMs), kv_buffer_bytes = context_bytes - rs_buffer_bytes."
            ),
            "settings_notes": (
                "n_batch 2048, n_ubatch 512 (common.h defaults); kv_unified true (llama-server's default: -np auto "
                "becomes 4 slots with kv_unified); flash_attn enabled for q8_0 caches (quantized V needs it), disabled "
                "for f16; n_gpu_layers 0, CPU backend only; compute buffer is the CPU backend's with 1 thread."
            ),
            "scripts": [
                "validation/llama_cpp/build.sh",
                "validation/llama_cpp/lcpp_alloc.cpp",
                "validation/llama_cpp/make_gguf.py",
                "validation/llama_cpp/measure.py",
            ],
            "date": datetime.date.today().isoformat(),
            "source": (
                "measured in this repository by validation/llama_cpp/measure.py with "
                f"ggml-org/llama.cpp@{LLAMA_CPP_COMMIT} (llama-cpp-python 0.3.36 sdist, PyPI)"
            ),
        },
        "cases": keep,
    }
    for case in keep:
        case["source"] = (
            f"validation/llama_cpp/measure.py, ggml-org/llama.cpp@{LLAMA_CPP_COMMIT}, "
            f"config {case['config_source']}"
        )
    OUT_JSON.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

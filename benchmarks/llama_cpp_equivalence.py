"""Dump every llama.cpp figure the estimator gives for a wide set of inputs, one JSON line each,
so two commits can be compared: a refactor of the llama.cpp estimate must leave every line as it
was. Not a test: the expected values are the code's own earlier output, not an independent
source.

    .venv/bin/python benchmarks/llama_cpp_equivalence.py dump before.jsonl   # at the old commit
    .venv/bin/python benchmarks/llama_cpp_equivalence.py dump after.jsonl    # at the new one
    .venv/bin/python benchmarks/llama_cpp_equivalence.py compare before.jsonl after.jsonl

Inputs: every catalogue config (``presets/models/*.json``) × every GGUF file type × option sets
(full offload, ``-ngl`` 0 / 1 / half / all repeating layers / past the end, short and long
contexts, 1 and 4 slots, flash attention on and off, quantized caches, ``--swa-full``); the
``/fits/`` reference shapes over a spread of sizes; deep configs (up to 10,000 layers, where the
loader's name order ``blk.0, blk.1, blk.10, …`` decides which layers get the larger types);
the per-tensor types (``gguf_tensor_types``, as a digest); the token-embedding bytes the speed
estimate reads; and the ``-ngl`` and context lever searches for several budgets.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calculator.estimator import (  # noqa: E402
    ConfigModel,
    CustomModel,
    EstimateRequest,
    estimate,
    resolve_architecture,
)
from calculator.estimator.architecture import Architecture  # noqa: E402
from calculator.estimator.runtimes.llama_cpp import (  # noqa: E402
    GGUF_TYPES,
    LlamaCppOptions,
    gguf_tensor_types,
    longest_context_full_offload,
    most_gpu_layers_that_fit,
)
from calculator.estimator.speed import token_embedding_bytes  # noqa: E402

GIB = 1 << 30
# The /fits/ columns and the types whose rules count layers or attn_v tensors.
LEVER_TYPES = ("F16", "Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M", "Q2_K")
DEEP_TYPES = (
    "F16",
    "Q8_0",
    "Q6_K",
    "Q5_K_M",
    "Q4_K_M",
    "Q4_K_S",
    "Q3_K_M",
    "Q3_K_L",
    "Q2_K",
    "IQ4_XS",
    "IQ3_M",
    "IQ3_XXS",
    "IQ2_XXS",
    "IQ1_M",
)


def catalogue() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((ROOT / "presets" / "models").glob("*.json")):
        for preset in json.loads(path.read_text())["presets"]:
            yield preset["slug"], preset["config"]


def deep_configs() -> Iterator[tuple[str, dict[str, Any]]]:
    configs = dict(catalogue())
    for layers in (100, 1234, 10_000):
        yield f"llama-{layers}", {**configs["llama-3-8b"], "num_hidden_layers": layers}
    yield "jamba-10000", {**configs["jamba-1.5-mini"], "num_hidden_layers": 10_000}
    qwen = {**configs["qwen3-30b-a3b"], "num_hidden_layers": 10_000}
    yield "qwen3-moe-10000", {**qwen, "mlp_only_layers": list(range(0, 10_000, 2))}


def option_sets(layers: int) -> dict[str, dict[str, Any]]:
    half = (layers + 1) // 2
    return {
        "default": {},
        "ngl0": {"n_gpu_layers": 0},
        "ngl1": {"n_gpu_layers": 1},
        "nglhalf": {"n_gpu_layers": half},
        "ngllayers": {"n_gpu_layers": layers},
        "nglpast": {"n_gpu_layers": layers + 5},
        "ctx512": {"n_ctx": 512, "n_parallel": 1},
        "ctx131k": {"n_ctx": 131072, "n_parallel": 4, "flash_attention": False},
        "ctx131k-q8": {"n_ctx": 131072, "n_parallel": 1, "cache_type_k": "q8_0"},
        "q4-half": {
            "cache_type_k": "q4_0",
            "cache_type_v": "q4_0",
            "n_gpu_layers": half,
            "flash_attention": False,
        },
        "swafull": {"n_ctx": 32768, "swa_full": True, "n_parallel": 2, "n_ubatch": 2048},
    }


def estimate_line(model: ConfigModel | CustomModel, options: dict[str, Any]) -> dict[str, Any]:
    request = EstimateRequest.model_validate(
        {"model": model, "runtime": "llama_cpp", "mode": "inference", "llama_cpp": options}
    )
    result = estimate(request)
    assert result.llama_cpp is not None
    return {
        "llama_cpp": result.llama_cpp.model_dump(mode="json"),
        # The dump sorts keys; the page and the API show the types in the file's order.
        "tensor_type_order": list(result.llama_cpp.tensor_types),
        "total_bytes": result.total_bytes,
        "host_bytes": result.host_bytes,
        "assumptions": [a.model_dump(mode="json") for a in result.assumptions],
    }


def types_digest(arch: Architecture, gguf_type: str) -> str:
    digest = hashlib.sha256()
    for t, kind in gguf_tensor_types(arch, gguf_type):
        digest.update(
            f"{t.name}|{t.category}|{t.layer}|{t.ne0}|{t.rows}|{t.quantizable}|{kind}\n".encode()
        )
    return digest.hexdigest()


def levers(arch: Architecture, gguf_type: str, extra: dict[str, Any]) -> dict[str, Any]:
    options = LlamaCppOptions(gguf_type=gguf_type, **extra)  # type: ignore[arg-type]
    full = estimate_line_arch(arch, options)
    out: dict[str, Any] = {}
    for budget in (8 * GIB, 24 * GIB, 80 * GIB, full, full - 1, full + 4096):
        out[str(budget)] = [
            most_gpu_layers_that_fit(arch, options, budget),
            longest_context_full_offload(arch, options, budget),
            longest_context_full_offload(arch, options, budget, limit=1 << 24),
        ]
    return out


def estimate_line_arch(arch: Architecture, options: LlamaCppOptions) -> int:
    from calculator.estimator.runtimes.llama_cpp import estimate_llama_cpp

    return estimate_llama_cpp(arch, options).gpu_bytes


def cases() -> Iterator[tuple[str, Any]]:
    models: list[tuple[str, ConfigModel | CustomModel, bool]] = [
        (slug, ConfigModel(config=config), False) for slug, config in catalogue()
    ]
    models += [(slug, ConfigModel(config=config), True) for slug, config in deep_configs()]
    sizes = sorted(
        {round(0.01 * 1.35**i, 4) for i in range(47)} | {7.0, 8.0, 70.0, 405.0, 20_000.0}
    )
    models += [
        (
            f"reference-{b}",
            CustomModel.model_validate({"params_billion": b, "num_kv_heads": 8}),
            False,
        )
        for b in sizes
    ]
    for index, (name, model, deep) in enumerate(models):
        arch = resolve_architecture(model)
        kinds = DEEP_TYPES if deep else GGUF_TYPES
        sets = option_sets(arch.num_layers)
        if deep or name.startswith("reference-"):
            sets = {
                k: sets[k] for k in ("default", "ngl0", "ngl1", "nglhalf", "ngllayers", "ctx131k")
            }
        for gguf_type in kinds:
            for set_name, extra in sets.items():
                yield (
                    f"estimate|{name}|{gguf_type}|{set_name}",
                    estimate_line(model, {"gguf_type": gguf_type, **extra}),
                )
            yield f"types|{name}|{gguf_type}", types_digest(arch, gguf_type)
            yield f"embd|{name}|{gguf_type}", token_embedding_bytes(arch, gguf_type)
        lever_types = LEVER_TYPES if not deep else ("Q4_K_M", "Q3_K_M")
        for gguf_type in lever_types:
            yield f"levers|{name}|{gguf_type}|default", levers(arch, gguf_type, {})
            if index % 4 == 0 or deep:
                yield (
                    f"levers|{name}|{gguf_type}|long",
                    levers(
                        arch, gguf_type, {"n_ctx": 65536, "n_parallel": 1, "flash_attention": False}
                    ),
                )


def dump(path: str) -> None:
    started = time.process_time()
    count = 0
    with open(path, "w") as out:
        for key, value in cases():
            out.write(json.dumps([key, value], sort_keys=True) + "\n")
            count += 1
    print(f"{count} results in {time.process_time() - started:.1f} s CPU → {path}")


def compare(before: str, after: str) -> int:
    def load(path: str) -> dict[str, Any]:
        with open(path) as lines:
            return {key: value for key, value in map(json.loads, lines)}

    old, new = load(before), load(after)
    differ = [key for key in old if key in new and old[key] != new[key]]
    missing = sorted(set(old) ^ set(new))
    numbers = sum(_leaves(value) for value in old.values())
    print(
        f"{len(old)} results ({numbers} numbers and strings) compared: {len(differ)} differ, "
        f"{len(missing)} present on one side only"
    )
    for key in (differ + missing)[:20]:
        print("  ", key)
    return 1 if differ or missing else 0


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["dump"]:
        dump(sys.argv[2])
    elif sys.argv[1:2] == ["compare"]:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)

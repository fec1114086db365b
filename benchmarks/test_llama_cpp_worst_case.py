"""The llama.cpp inputs that cost the most CPU per request (security review findings 2 and 11):
the /fits/ table for the widest workload the form takes, and the page's llama.cpp advice for a
pasted 10,000-layer config. Each round starts cold (the process's estimate and layout memos and
the page cache emptied) and is timed in CPU seconds (``time.process_time``), so a busy host
does not inflate it. Target: about 1 s each. Run on demand with `make bench`."""

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from calculator.estimator.runtimes import llama_cpp
from calculator.result import presenters, reverse

PRESETS = Path(__file__).resolve().parent.parent / "presets" / "models"
TARGET_CPU_S = 1.0


def _cold() -> None:
    presenters._ESTIMATES.clear()
    cache.clear()
    for module in (llama_cpp, reverse):
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def _preset_config(family: str, slug: str) -> dict[str, Any]:
    presets = json.loads((PRESETS / f"{family}.json").read_text())["presets"]
    return dict(next(p["config"] for p in presets if p["slug"] == slug))


def _deep_config(kind: str) -> str:
    """10,000 layers; Qwen3 MoE with every other layer dense (``mlp_only_layers``), so the
    loader's per-layer types and the MoE layer set both span the whole depth."""
    layers = 10_000
    if kind == "qwen3_moe":
        config = _preset_config("qwen", "qwen3-30b-a3b")
        config["mlp_only_layers"] = list(range(0, layers, 2))
    elif kind == "jamba":
        config = _preset_config("jamba", "jamba-1.5-mini")
    else:
        config = _preset_config("llama", "llama-3-8b")
    config["num_hidden_layers"] = layers
    return json.dumps(config)


def _report(benchmark: Any, what: str) -> None:
    mean = benchmark.stats.stats.mean
    print(f"\n{what}: {mean:.2f} s CPU = {mean / TARGET_CPU_S:.2f} × the {TARGET_CPU_S:g} s target")


@pytest.mark.django_db
@pytest.mark.benchmark(timer=time.process_time)
@pytest.mark.parametrize(
    "query",
    [
        "runtime=llama_cpp",
        "runtime=llama_cpp&seq=131072&batch=9&gb=100000",
        "runtime=llama_cpp&seq=1048576&gpu=h100-sxm-80gb",
    ],
)
def test_fits_llama_cpp_cpu(benchmark, client, query):
    response = benchmark.pedantic(
        client.get, args=(f"/fits/?{query}",), setup=_cold, rounds=3, iterations=1
    )
    assert response.status_code == 200
    _report(benchmark, f"/fits/?{query}, cold")


@pytest.mark.django_db
@pytest.mark.benchmark(timer=time.process_time)
@pytest.mark.parametrize("kind", ["qwen3_moe", "jamba", "llama"])
def test_deep_config_llama_cpp_advice_cpu(benchmark, client, kind):
    data = {"source": "config", "config": _deep_config(kind), "runtime": "llama_cpp"}
    data["part"] = "more"
    response = benchmark.pedantic(
        client.post,
        args=("/", data),
        kwargs={"HTTP_HX_REQUEST": "true"},
        setup=_cold,
        rounds=3,
        iterations=1,
    )
    assert response.status_code == 200
    assert b"llama" in response.content.lower()
    _report(benchmark, f"10,000-layer {kind} paste, llama.cpp advice (part=more), cold")

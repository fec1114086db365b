"""The worst-case sweep (issue 24): the CPU one request costs for the largest and most absurd
inputs, every runtime on /fits/, and the review's reproductions. Target: about 1 s of CPU per
request on the 2-core machine, for any input.

Each case runs in a fresh process (``python benchmarks/worst_case.py --case N``) so that no memo
or page cache of an earlier case helps it, and so that a case that never ends (the chart loop of
finding 1 on an old commit) is killed at ``--timeout`` and reported as such. The figure is
``time.process_time()`` around the one request, after a warm-up request that imports the views
(gunicorn workers import them at start, config/wsgi.py). Run on demand: ``make bench`` runs it;
``python benchmarks/worst_case.py --ref <dir>`` runs the same cases against another checkout
(e.g. a worktree of an older commit) for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
TARGET_CPU_S = 1.0


def _config(name: str, **changes: object) -> str:
    config = json.loads((ROOT / "validation" / "configs" / f"{name}.json").read_text())
    config.update(changes)
    return json.dumps(config)


DEEP_LAYERS = 10_000
CASES: list[tuple[str, str, dict[str, str]]] = []  # (label, method+path, form fields)


def _case(label: str, path: str, fields: dict[str, str] | None = None) -> None:
    CASES.append((label, path, fields or {}))


for runtime in ("transformers", "llama_cpp", "vllm"):
    _case(f"/fits/ {runtime} defaults", f"GET /fits/?runtime={runtime}")
    _case(
        f"/fits/ {runtime} seq 131072 batch 9 gb 100000",
        f"GET /fits/?runtime={runtime}&seq=131072&batch=9&gb=100000",
    )
    _case(
        f"/fits/ {runtime} seq 1048576 on an H100",
        f"GET /fits/?runtime={runtime}&seq=1048576&gpu=h100-sxm-80gb",
    )
for mode in ("lora", "qlora", "full_finetune"):
    _case(f"/fits/ {mode} gb 100000 × 1024", f"GET /fits/?mode={mode}&gb=100000&count=1024")
_case("/fits/ llama_cpp seq 1048576 batch 10", "GET /fits/?runtime=llama_cpp&seq=1048576&batch=10")

REVIEW_CONFIG = json.dumps(
    {
        "model_type": "llama",
        "hidden_size": 10**12,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "vocab_size": 32000,
    }
)
_case(
    "review link: hidden_size 10^12, page",
    "GET /?" + urlencode({"source": "config", "config": REVIEW_CONFIG}),
)
_case(
    "review link: hidden_size 10^12, part=more",
    "GET /?" + urlencode({"source": "config", "config": REVIEW_CONFIG, "part": "more"}),
)
DEEP_CONFIGS = {
    "llama": _config("llama-3.1-8b", num_hidden_layers=DEEP_LAYERS),
    "qwen3_moe": _config("qwen3-30b-a3b", num_hidden_layers=DEEP_LAYERS),
    "jamba": _config("preset-jamba-1.5-mini", num_hidden_layers=DEEP_LAYERS),
}
for family, text in DEEP_CONFIGS.items():
    for runtime in ("transformers", "llama_cpp", "vllm"):
        for part in ("first", "more"):
            fields = {"source": "config", "config": text, "runtime": runtime}
            if part == "more":
                fields["part"] = "more"
            _case(f"{DEEP_LAYERS:,}-layer {family}, {runtime}, {part}", "HTMX POST /", fields)
_case(
    "custom shape at every maximum, pretrain, eager",
    "GET /?"
    + urlencode(
        {
            "source": "custom",
            "layers": 10_000,
            "hidden": 1_000_000,
            "heads": 10_000,
            "seq": 10_000_000,
            "batch": 1_000_000,
            "mode": "pretrain",
            "attn": "eager",
        }
    ),
)
_case(
    "largest catalogue model, llama_cpp, 1M context, batch 8",
    "HTMX GET /?"
    + urlencode({"model": "deepseek-v3", "runtime": "llama_cpp", "seq": 1_048_576, "batch": 8}),
)


CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.conf import settings
from django.core.cache import cache
from django.test import Client
settings.FITS_RATE_PER_MINUTE = 10**9  # a sweep, not one client's abuse
settings.PASTED_CONFIG_RATE_PER_HOUR = 10**9
label, path, fields = json.loads(sys.argv[1])
client = Client()
client.get("/_ping")
import config.urls  # noqa: F401  (what a gunicorn worker imports at start)
cache.clear()
method, _, target = path.rpartition(" ")
headers = {"HTTP_HX_REQUEST": "true"} if "HTMX" in method else {}
start = time.process_time()
if "POST" in method:
    response = client.post(target, fields, **headers)
else:
    response = client.get(target, **headers)
print(json.dumps({"status": response.status_code, "cpu_s": time.process_time() - start}))
"""


def run_case(index: int, root: Path, timeout: float) -> dict[str, object]:
    label, path, fields = CASES[index]
    env = {
        **os.environ,
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "bench-" + "x" * 44,
        "DJANGO_DEBUG": "0",
        "DJANGO_HTTPS": "0",
        "DJANGO_ALLOWED_HOSTS": "testserver",
    }
    try:
        done = subprocess.run(
            [str(root / ".venv/bin/python"), "-c", CHILD, json.dumps([label, path, fields])],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": "killed", "cpu_s": None}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"status": f"crashed ({done.returncode})", "cpu_s": None}
    return dict(json.loads(lines[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ref", type=Path, help="another checkout to run the same cases in")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--only", help="run only the cases whose label contains this text")
    args = parser.parse_args()
    roots = [("this", ROOT)] + ([("ref", args.ref.resolve())] if args.ref else [])
    print(
        f"{'case':58} "
        + " ".join(f"{name + ' status':>14} {name + ' CPU s':>10}" for name, _ in roots)
    )
    worst = 0.0
    for index, (label, _path, _fields) in enumerate(CASES):
        if args.only and args.only not in label:
            continue
        cells = []
        for name, root in roots:
            outcome = run_case(index, root, args.timeout)
            cpu = outcome["cpu_s"]
            if name == "this" and isinstance(cpu, float):
                worst = max(worst, cpu)
            shown = f"{cpu:.2f}" if isinstance(cpu, float) else f">{args.timeout:.0f}"
            cells.append(f"{outcome['status']!s:>14} {shown:>10}")
        print(f"{label[:58]:58} " + " ".join(cells), flush=True)
    print(
        f"\nworst case here: {worst:.2f} s of CPU = {worst / TARGET_CPU_S:.2f} × the {TARGET_CPU_S:g} s target"
    )
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)

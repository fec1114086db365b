"""Load benchmark: gunicorn on loopback, wrk at 1, 8 and 32 connections, run on demand.

    make bench-load            (or: .venv/bin/python benchmarks/load.py --seconds 10)

Drives the HTMX recompute endpoint with realistic permalinks and, on the same server, a trivial
Django view (/_ping, the full middleware stack and nothing else). The figure to quote is the ratio
of the two, since absolute numbers vary between machines. Two recompute variants: "repeat" cycles
through 12 permalinks (what happens when people share and reopen links: served from the
per-permalink cache), "fresh" gives every request a context length never asked before (the
estimator and the templates run each time). Bounded: each run lasts --seconds, on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.serve import gunicorn

PERMALINKS = [
    "/?model=Llama+3.1+8B&mode=inference&seq=4096",
    "/?model=Llama+3.1+8B&mode=inference&seq=32768&batch=4",
    "/?model=qwen2-7B&mode=lora&batch=2&seq=2048",
    "/?model=Qwen2.5+72B&mode=inference&precision=int4&gpu=a100-sxm-80gb",
    "/?model=Mistral+7B+v0.1&mode=qlora&seq=4096&ckpt=on",
    "/?model=Mixtral+8x7B&mode=inference&gpu=h100-sxm-80gb",
    "/?model=gpt2&mode=full_finetune&precision=fp32&batch=8&seq=1024",
    "/?model=Llama+3.1+70B&mode=full_finetune&mixed=on&gpus=8&zero=3",
    "/?model=Gemma+2+9B&mode=lora&lora_targets=all-linear&seq=8192",
    "/?model=Phi-3+mini+4k&mode=inference&kv=fp8&seq=4096",
    "/?model=DeepSeek+V3&mode=inference&precision=fp8&gpus=8&tp=8",
    "/?model=Qwen3+8B&mode=full_finetune&optimizer=adamw_8bit&ckpt=on",
]

LUA_CYCLE = """
local paths = {%s}
local i = 0
request = function()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i], {["HX-Request"] = "true"})
end
"""
# Never-seen inputs: every wrk thread and every run asks contexts nobody asked before. The page
# cache keys a page by the inputs the view reads (``run`` is not one), so each run starts at a
# context length of its own: a worker that saw a key in an earlier run would otherwise write it
# to the shared cache (database or Redis, which outlives a run) and later runs would read it.
LUA_FRESH = """
local threads = 0
function setup(thread)
  thread:set("offset", %d + threads * 200000)
  threads = threads + 1
end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", "/?model=qwen2-7B&mode=lora&run=%s&seq=" .. (offset + i),
                    {["HX-Request"] = "true"})
end
"""


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, capture_output=True)
        return shutil.which("wrk") or "wrk"
    sys.exit("wrk is missing: sudo apt-get install wrk")


def run_wrk(wrk: str, url: str, connections: int, seconds: int, script: Path) -> dict[str, float]:
    threads = max(1, min(2, connections))
    out = subprocess.run(
        [wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True, timeout=seconds + 30,
    ).stdout  # fmt: skip

    def latency(label: str) -> float:
        match = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)", out, re.M)
        if not match:
            return float("nan")
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    errors = 0
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    if socket_errors:
        errors += sum(int(n) for n in socket_errors.groups())
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non_2xx:
        errors += int(non_2xx.group(1))
    return {"rps": rps, "p50": latency("50"), "p99": latency("99"), "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--root", type=Path, default=None, help="serve another checkout (before/after)"
    )
    args = parser.parse_args()
    wrk = ensure_wrk()
    with gunicorn(args.workers, **({"root": args.root} if args.root else {})) as base:
        for _ in range(args.workers * 2):  # warm every worker's caches
            for path in PERMALINKS:
                request = urllib.request.Request(base + path, headers={"HX-Request": "true"})
                urllib.request.urlopen(request, timeout=30).read()
        with tempfile.TemporaryDirectory() as tmp:
            cycle = Path(tmp) / "cycle.lua"
            cycle.write_text(LUA_CYCLE % ", ".join(f'"{p}"' for p in PERMALINKS))
            fresh = Path(tmp) / "fresh.lua"
            ping = Path(tmp) / "ping.lua"
            ping.write_text('request = function() return wrk.format("GET", "/_ping") end\n')
            print(
                f"gunicorn, {args.workers} workers, {os.cpu_count()} CPUs, {args.seconds} s per run\n"
            )
            print("| clients | endpoint | req/s | p50 ms | p99 ms | errors | req/s vs bare view |")
            print("|---:|---|---:|---:|---:|---:|---:|")
            for connections in (1, 8, 32):
                first = 100_000 + time.time_ns() // 1000 % 3_000_000
                fresh.write_text(LUA_FRESH % (first, f"{os.getpid()}-{time.time_ns()}"))
                bare = run_wrk(wrk, base, connections, args.seconds, ping)
                for name, script in (
                    ("bare view /_ping", ping),
                    ("recompute, repeat", cycle),
                    ("recompute, fresh", fresh),
                ):
                    row = (
                        bare
                        if script is ping
                        else run_wrk(wrk, base, connections, args.seconds, script)
                    )
                    print(
                        f"| {connections} | {name} | {row['rps']:.0f} | {row['p50']:.2f} | {row['p99']:.2f} | "
                        f"{row['errors']:.0f} | {row['rps'] / bare['rps']:.2f} |"
                    )


if __name__ == "__main__":
    main()

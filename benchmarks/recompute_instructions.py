"""CPU instructions per request, counted by valgrind: a figure that does not move with the load
of a shared machine (timings on the 2-core machines here moved by ±30% between runs).

    make bench-instructions      (or: .venv/bin/python benchmarks/recompute_instructions.py)

Each endpoint is asked ROUNDS times in-process (the whole middleware stack, production
settings, the local database) inside valgrind's cachegrind, and once with no request at all;
the difference over ROUNDS is one request's instructions. Endpoints: the never-seen recompute
(the htmx first view, every request a context length never asked before), the deferred advice
and GPU list it then loads, and the bare view /_ping. Run on demand, not by `make test`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 200
ENDPOINTS = {
    "never-seen recompute, first view": "/?model=qwen2-7B&mode=lora&run={nonce}&seq={i}",
    "never-seen recompute, deferred advice and GPU list": (
        "/?model=qwen2-7B&mode=lora&run={nonce}&seq={i}&part=more"
    ),
    "bare view /_ping": "/_ping",
}


def child(template: str, rounds: int) -> None:
    """What runs inside valgrind: a warmed-up client, then ``rounds`` requests."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.test import Client

    client = Client()
    for i in range(20):  # imports, catalogue memo, template compilation
        for warm in ENDPOINTS.values():
            client.get(warm.format(nonce="warm", i=500 + i), HTTP_HX_REQUEST="true")
    nonce = time.time_ns()
    # The page cache keys a page by the inputs the view reads, and ``run`` is not one: a
    # context length of its own per run keeps out pages an earlier process cached. Below the
    # model's 32,768-token window, so every run renders the same parts.
    first = 1000 + 1000 * (nonce // 1000 % 30)
    for i in range(rounds):
        response = client.get(template.format(nonce=nonce, i=first + i), HTTP_HX_REQUEST="true")
        assert response.status_code == 200, response.status_code


def ensure_valgrind() -> str:
    found = shutil.which("valgrind")
    if found:
        return found
    if os.geteuid() == 0:
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "valgrind"], check=True, capture_output=True
        )
        return shutil.which("valgrind") or "valgrind"
    sys.exit("valgrind is missing: sudo apt-get install valgrind")


def instructions(valgrind: str, template: str, rounds: int) -> int:
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "DJANGO_HTTPS": "0",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    env.setdefault("DJANGO_SECRET_KEY", (ROOT / "var" / "secret_key").read_text().strip())
    out = subprocess.run(
        [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", template, str(rounds)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stderr  # fmt: skip
    found = re.search(r"I\s+refs:\s+([\d,]+)", out)
    assert found, out[-2000:]
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--child", nargs=2, metavar=("URL", "ROUNDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    valgrind = ensure_valgrind()
    jobs = {"(none)": ("/_ping", 0)} | {name: (url, args.rounds) for name, url in ENDPOINTS.items()}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        counts = dict(
            zip(
                jobs, pool.map(lambda job: instructions(valgrind, *job), jobs.values()), strict=True
            )
        )
    per_request = {name: (counts[name] - counts["(none)"]) / args.rounds for name in ENDPOINTS}
    bare = per_request["bare view /_ping"]
    print(f"valgrind cachegrind, {args.rounds} requests per endpoint, in-process\n")
    print("| endpoint | million instructions per request | vs bare view |")
    print("|---|---:|---:|")
    for name, value in per_request.items():
        print(f"| {name} | {value / 1e6:.2f} | {value / bare:.1f}× |")


if __name__ == "__main__":
    main()

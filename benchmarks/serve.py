"""gunicorn on a free loopback port for the benchmarks that drive a real server (load.py,
live.py): production settings, the project's own secret key, warnings only."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gunicorn(workers: int = 2, root: Path = ROOT) -> Iterator[str]:
    """Serve the app (of this checkout, or of another at ``root``, to measure two commits side
    by side); yields its base URL once /_ping answers, and stops it afterwards."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "DJANGO_HTTPS": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECRET_KEY": (root / "var" / "secret_key").read_text().strip(),
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    server = subprocess.Popen(
        [str(root / ".venv/bin/gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--log-level", "warning"],
        cwd=root, env=env, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/_ping", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)

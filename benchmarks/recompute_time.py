"""Server time of the HTMX recompute, in-process with the production settings and the local
database (the whole middleware stack, no network). Target: p50 under 10 ms.

    make bench        (runs this after the pytest-benchmark suite)
"""

import os
import statistics
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
django.setup()

from django.test import Client  # noqa: E402

ROUNDS = 200


def p50_ms(client: Client, urls: list[str]) -> float:
    times = []
    for url in urls:
        start = time.perf_counter()
        response = client.get(url, HTTP_HX_REQUEST="true", HTTP_HOST="127.0.0.1")
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
    return statistics.median(times) * 1000


def main() -> None:
    client = Client()
    warm = [f"/?model=qwen2-7B&mode=lora&seq={seq}" for seq in range(500, 510)]
    p50_ms(client, warm)
    # A nonce keeps the shared page cache (which outlives this process) out of "never seen".
    nonce = time.time_ns()
    fresh = p50_ms(
        client, [f"/?model=qwen2-7B&mode=lora&run={nonce}&seq={1000 + i}" for i in range(ROUNDS)]
    )
    # The second request the page makes: the advice (lever searches) and the GPU list.
    advice = p50_ms(
        client,
        [f"/?model=qwen2-7B&mode=lora&run={nonce}&seq={1000 + i}&part=more" for i in range(ROUNDS)],
    )
    shared = p50_ms(client, ["/?model=qwen2-7B&mode=lora&seq=4096"] * ROUNDS)
    for label, value in (
        ("never-seen inputs, first view", fresh),
        ("never-seen inputs, the deferred advice and GPU list", advice),
        ("shared permalink", shared),
    ):
        print(f"recompute, {label}: p50 {value:.2f} ms = {value / 10:.2f} × the 10 ms target")


if __name__ == "__main__":
    main()

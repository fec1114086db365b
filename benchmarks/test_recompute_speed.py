"""Server time of the HTMX recompute, in-process (the whole middleware stack, no network).
Target: p50 under 10 ms for inputs nobody asked before. Run on demand with `make bench`."""

import itertools

import pytest

FRESH = itertools.count(1000)


@pytest.mark.django_db
@pytest.mark.parametrize("cached", [False, True], ids=["never-seen-inputs", "shared-permalink"])
def test_recompute_server_time(benchmark, client, cached):
    def recompute() -> int:
        seq = 4096 if cached else next(FRESH)
        response = client.get(f"/?model=qwen2-7B&mode=lora&seq={seq}", HTTP_HX_REQUEST="true")
        return response.status_code

    for _ in range(5):  # warm templates, the catalogue memo and the estimator caches
        recompute()
    status = benchmark.pedantic(recompute, rounds=100, iterations=1)
    assert status == 200
    p50 = benchmark.stats.stats.median
    label = "shared permalink" if cached else "never-seen inputs"
    print(f"\nrecompute, {label}: p50 {p50 * 1000:.2f} ms = {p50 / 0.010:.2f} × the 10 ms target")

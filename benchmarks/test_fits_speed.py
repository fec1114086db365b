"""The 'what fits' tier table: the whole table from the estimator (a search per cell + the
catalogue), per mode and per runtime. Each round starts cold: the process's estimate memo and the
page cache are emptied first, so the figures are what a first visitor waits for.
Target: well under a second. Run on demand with `make bench`."""

import time

import pytest
from django.core.cache import cache

from calculator.catalogue.models import ModelPreset
from calculator.result import presenters, reverse


def _cold() -> None:
    presenters._ESTIMATES.clear()
    cache.clear()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("mode", "runtime"),
    [
        ("inference", "transformers"),
        ("lora", "transformers"),
        ("qlora", "transformers"),
        ("full_finetune", "transformers"),
        ("inference", "llama_cpp"),
        ("inference", "vllm"),
    ],
)
def test_tier_table_speed(benchmark, mode, runtime):
    presets = list(ModelPreset.objects.filter(active=True))
    workload = reverse.Workload(mode=mode, seq_len=4096, batch_size=1, runtime=runtime)
    table = benchmark.pedantic(
        reverse.tier_table, args=(workload, presets), setup=_cold, rounds=3, iterations=1
    )
    assert len(table) == 12
    mean = benchmark.stats.stats.mean
    print(f"\n{mode}/{runtime}: whole table in {mean * 1000:.0f} ms = {mean:.2f} × the 1 s target")


@pytest.mark.django_db
@pytest.mark.parametrize("runtime", ["transformers", "llama_cpp", "vllm"])
def test_fits_page_speed(benchmark, client, runtime):
    url = f"/fits/?gpu=rtx-4090-24gb&runtime={runtime}"
    response = benchmark.pedantic(client.get, args=(url,), setup=_cold, rounds=3, iterations=1)
    assert response.status_code == 200
    mean = benchmark.stats.stats.mean
    print(f"\n/fits/ {runtime} with your-GPU list, cold: {mean * 1000:.0f} ms = {mean:.2f} × 1 s")
    started = time.perf_counter()
    assert client.get(url).status_code == 200  # the page cache answers the next visitor
    print(
        f"/fits/ {runtime} again, from the page cache: {(time.perf_counter() - started) * 1000:.0f} ms"
    )

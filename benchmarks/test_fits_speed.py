"""The 'what fits' tier table: the whole table from the estimator (60 searches + the catalogue).
Target: well under a second. Run on demand with `make bench`."""

import pytest

from calculator import reverse
from calculator.models import ModelPreset


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["inference", "lora", "qlora", "full_finetune"])
def test_tier_table_speed(benchmark, mode):
    presets = list(ModelPreset.objects.filter(active=True))
    workload = reverse.Workload(mode=mode, seq_len=4096, batch_size=1)
    table = benchmark.pedantic(reverse.tier_table, args=(workload, presets), rounds=3, iterations=1)
    assert len(table) == 12
    mean = benchmark.stats.stats.mean
    print(f"\n{mode}: whole table in {mean * 1000:.0f} ms = {mean:.2f} × the 1 s target")


@pytest.mark.django_db
def test_fits_page_speed(benchmark, client):
    response = benchmark.pedantic(
        client.get, args=("/fits/?gpu=rtx-4090-24gb",), rounds=3, iterations=1
    )
    assert response.status_code == 200
    mean = benchmark.stats.stats.mean
    print(f"\n/fits/ with your-GPU list: {mean * 1000:.0f} ms = {mean:.2f} × the 1 s target")

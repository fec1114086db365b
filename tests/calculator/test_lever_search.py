"""The lever search (secant steps with exact checks) finds exactly what a plain bisection over
the estimator finds, in fewer estimator runs (issue 16: faster never-seen recompute).

The reference below is an independent, deliberately naive search: bisection over [1, upper].
"""

import pytest

from calculator.estimator import EstimateRequest, estimate
from calculator.result import presenters
from tests.conftest import load_validation_config

GIB = 1 << 30


def reference_largest(request, field, usable, upper):
    def fits(value):
        changed = presenters.with_changes(request, **{field: value})
        return estimate(changed).total_bytes <= usable

    if not fits(1):
        return None
    low, high = 1, upper + 1
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


CASES = [
    ("llama-3.1-8b", {"mode": "inference"}, "seq_len", 24),
    ("llama-3.1-8b", {"mode": "inference", "attention": "eager"}, "seq_len", 24),  # quadratic
    ("llama-3.1-8b", {"mode": "lora", "gradient_checkpointing": True}, "batch_size", 40),
    ("gemma-2-9b", {"mode": "inference"}, "seq_len", 48),  # sliding-window layers
    ("mistral-7b-v0.1", {"mode": "full_finetune", "precision": "bf16"}, "batch_size", 80),
    ("mixtral-8x7b-v0.1", {"mode": "inference", "precision": "int4"}, "batch_size", 48),
    ("gpt2", {"mode": "pretrain", "attention": "eager"}, "seq_len", 16),
]


@pytest.mark.parametrize(("name", "fields", "field", "gib"), CASES)
@pytest.mark.parametrize("start", [1, 700, 5000])
def test_search_equals_bisection(name, fields, field, gib, start):
    request = EstimateRequest.model_validate(
        {"model": {"config": load_validation_config(name)}, **fields, field: start}
    )
    usable, upper = gib * GIB, 1 << 20
    assert presenters.largest_fitting(request, field, usable, upper) == reference_largest(
        request, field, usable, upper
    )


def test_search_needs_few_estimator_runs(monkeypatch):
    calls: list[int] = []

    def counting(request):
        calls.append(1)
        return estimate(request)

    monkeypatch.setattr(presenters, "estimate", counting)
    presenters._ESTIMATES.clear()
    request = EstimateRequest.model_validate(
        {"model": {"config": load_validation_config("llama-3.1-8b")}, "seq_len": 4096}
    )
    presenters.largest_fitting(request, "seq_len", 24 * GIB, 1 << 22)
    # Bisection over 2^22 values takes 22 runs; memory linear in the context needs ~4.
    assert len(calls) <= 8


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("llama-3.1-8b", {"mode": "inference"}),
        ("llama-3.1-8b", {"mode": "full_finetune", "precision": "bf16"}),
        ("mixtral-8x7b-v0.1", {"mode": "inference"}),
        ("dbrx-instruct", {"mode": "lora"}),
        ("gpt2", {"mode": "pretrain"}),
    ],
)
def test_the_gpu_list_stops_counting_once_every_card_holds_the_job(name, changes):
    """The GPU list from the counts up to the first that every catalogue card holds equals the
    list from all seven counts (1-64 GPUs): no card needs more GPUs than that count."""
    from calculator.catalogue.models import GpuSpec

    gpus = list(GpuSpec.objects.filter(active=True))
    assert len(gpus) > 10  # the catalogue the migrations and load_presets put in the test database
    smallest = min(gpu.usable_bytes for gpu in gpus)
    request = EstimateRequest.model_validate(
        {"model": {"config": load_validation_config(name)}, **changes}
    )
    every_count = presenters.sharded_totals(request)
    stopped = presenters.sharded_totals(request, enough_bytes=smallest)
    assert presenters.gpu_fits(gpus, stopped) == presenters.gpu_fits(gpus, every_count)
    if min(every_count.values()) <= smallest:  # some count fits every card: fewer estimates
        assert len(stopped) < len(every_count)


def test_the_estimate_memo_drops_the_least_recently_used_result(monkeypatch):
    """Bounded, least recently used out: a full garbage collection walks every result it holds,
    so an unbounded or large memo lengthens each worker's pauses (issue 16)."""
    calls: list[int] = []

    def counting(request):
        calls.append(request.seq_len)
        return estimate(request)

    monkeypatch.setattr(presenters, "estimate", counting)
    monkeypatch.setattr(presenters, "_ESTIMATE_CACHE_SIZE", 3)
    presenters._ESTIMATES.clear()
    base = EstimateRequest.model_validate({"model": {"config": load_validation_config("gpt2")}})
    first, second, third, fourth = (
        presenters.with_changes(base, seq_len=length) for length in (128, 256, 512, 1024)
    )
    for request in (first, second, third):
        presenters.cached_estimate(request)
    presenters.cached_estimate(first)  # used again: now the most recent
    presenters.cached_estimate(fourth)  # the memo is full: the least recent (256) goes
    assert len(presenters._ESTIMATES) == 3
    presenters.cached_estimate(first)
    presenters.cached_estimate(third)
    presenters.cached_estimate(second)  # computed again
    assert calls == [128, 256, 512, 1024, 256]

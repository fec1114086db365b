"""Chart geometry (calculator/result/charts.py) against points worked out by hand, and the SVG partial.

The default frame: viewBox 496 × 300, plot box from x = 64 to 464 (400 wide) and y = 28 to 228
(200 high). x is base-2 logarithmic; y linear from zero to the top "nice" tick, or (vLLM's
concurrency) base-10 logarithmic between its lowest and highest tick.
"""

import itertools

import pytest
from django.template.loader import render_to_string
from django.utils import translation

from calculator.result.charts import (
    GIB,
    Chart,
    Point,
    Tick,
    concurrency_chart,
    linear_ticks,
    log_ticks,
    memory_chart,
    nice_step,
    throughput_chart,
)


def test_nice_steps_are_round():
    # span / count = 5 -> 5; 47.5 -> 50; 0.225 -> 0.25; 250 -> 250.
    assert nice_step(20, 4) == 5
    assert nice_step(190, 4) == 50
    assert nice_step(0.9, 4) == pytest.approx(0.25)
    assert nice_step(1000, 4) == pytest.approx(250)
    assert linear_ticks(190) == [0, 50, 100, 150, 200]
    assert linear_ticks(20) == [0, 5, 10, 15, 20]


def test_tick_labels_carry_the_decimals_they_need():
    # A 0.9 top is cut in steps of 0.25: "0.25" needs two decimals, "0.5" one, "1" none.
    ticks = [Tick(value=v, position=0) for v in linear_ticks(0.9)]
    assert [t.value for t in ticks] == [0, 0.25, 0.5, 0.75, 1]
    assert [t.places for t in ticks] == [0, 2, 1, 2, 0]


def test_log_ticks():
    # 0.95 to 15.25 (1.2 decades): 1-2-5 ticks from the one below to the one above.
    assert log_ticks(0.953125, 15.25) == [0.5, 1, 2, 5, 10, 20]
    # 0.37 to 23.67 would take eight 1-2-5 ticks: powers of ten only.
    assert log_ticks(0.37, 23.67) == [0.1, 1, 10, 100]
    assert log_ticks(127, 1000) == [100, 200, 500, 1000]


def test_memory_chart_by_hand():
    chart = memory_chart(
        [(1024, 8 * GIB), (2048, 10 * GIB), (4096, 14 * GIB)],
        usable_bytes=20 * GIB,
        current=(2048, 10 * GIB),
    )
    # The usable line (20 GiB) sets the top: ticks 0, 5, 10, 15, 20 GiB.
    # x: log2 10..12 over 400 units, 200 per doubling. y: 200 units for 20 GiB, 10 per GiB.
    # (1024, 8): (64, 228 - 80 = 148); (2048, 10): (264, 128); (4096, 14): (464, 88).
    assert chart.points == (
        Point(value_x=1024, value_y=8, x=64, y=148),
        Point(value_x=2048, value_y=10, x=264, y=128),
        Point(value_x=4096, value_y=14, x=464, y=88),
    )
    assert chart.limit == Tick(value=20, position=28)
    # The limit runs along the top, beside the axis unit: its label goes below the line.
    assert chart.limit_label_y == 48
    assert chart.marker == Point(value_x=2048, value_y=10, x=264, y=128)
    assert [(t.value, t.position) for t in chart.y_ticks] == [
        (0, 228),
        (5, 178),
        (10, 128),
        (15, 78),
        (20, 28),
    ]
    assert [t.places for t in chart.y_ticks] == [0, 0, 0, 0, 0]
    assert [t.value for t in chart.x_ticks] == [1024, 2048, 4096]
    assert chart.path == "M64.0 148.0 L264.0 128.0 L464.0 88.0"


def test_throughput_chart_by_hand():
    chart = throughput_chart([(1, 30.0), (2, 58.0), (4, 110.0), (8, 190.0)], current_batch=4)
    # Ticks 0..200 by 50; y: 200 units for 200 tokens/s. x: 400 / 3 doublings = 133.33.
    # (1, 30): (64, 228 - 30 = 198); (4, 110): (64 + 266.67 = 330.67, 118); (8, 190): (464, 38).
    assert chart.points[0] == Point(value_x=1, value_y=30, x=64, y=198)
    assert chart.points[2] == Point(value_x=4, value_y=110, x=330.67, y=118)
    assert chart.points[3] == Point(value_x=8, value_y=190, x=464, y=38)
    assert chart.marker == chart.points[2]
    assert chart.limit is None


# vLLM on an RTX 3090, Llama 3.1 8B, published start-up log (vllm-project/vllm#10517, in
# validation/published/vllm_logs.json): 1,952 blocks of 16 tokens, "Maximum concurrency for 20000
# tokens per request: 1.56x". A request of L tokens takes ceil(L / 16) blocks, so the pool holds
# 1952 / (L / 16) requests at the powers of two: 15.25 at 2,048, 7.625, 3.8125, 1.90625 and
# 0.953125 at 32,768; one request fits up to 1,952 × 16 = 31,232 tokens.
RTX_3090_POOL = [(2048, 15.25), (4096, 7.625), (8192, 3.8125), (16384, 1.90625), (32768, 0.953125)]


def test_concurrency_chart_by_hand():
    chart = concurrency_chart(RTX_3090_POOL, current=(20000, 1.56), longest=31232)
    assert chart is not None
    # y: ticks 0.5 .. 20 (1-2-5), log10(20 / 0.5) = 1.60206 decades over 200 units, 124.84 each:
    # y(v) = 228 - 124.84 × log10(v / 0.5). x: log2 11 .. 15 over 400 units, 100 per doubling.
    assert [(t.value, t.position) for t in chart.y_ticks] == [
        (0.5, 228),
        (1, 190.42),
        (2, 152.84),
        (5, 103.16),
        (10, 65.58),
        (20, 28),
    ]
    assert [(p.x, p.y) for p in chart.points] == [
        (64, 42.7),
        (164, 80.28),
        (264, 117.86),
        (364, 155.44),
        (464, 193.02),
    ]
    # 20,000 tokens: x = 64 + 100 × (log2 20000 - 11) = 64 + 328.77; 1.56 requests: y = 166.31.
    assert chart.marker == Point(value_x=20000, value_y=1.56, x=392.77, y=166.31)
    # The limit: 31,232 tokens, x = 64 + 100 × (14.93074 - 11) = 457.07; shaded to 464.
    assert chart.limit_x == Tick(value=31232, position=457.07)
    assert chart.beyond_width == 6.93
    assert chart.limit_x_label_end  # in the right half: its label goes to the left
    assert chart.limit is None
    # "32,768" needs 6 × 10 + 12 = 72 units, less than the 100 of one doubling: all labelled.
    assert [t.value for t in chart.x_ticks] == [2048, 4096, 8192, 16384, 32768]


def test_a_pool_that_holds_nothing_has_no_concurrency_chart():
    # Weights that leave no KV-cache pool: 0 requests at every length, nothing for a log axis.
    assert concurrency_chart([(2048, 0.0), (4096, 0.0)], current=(4096, 0.0), longest=0) is None


def test_a_chosen_length_between_powers_of_two_is_a_point_not_a_label():
    chart = memory_chart(
        [(8192, 10 * GIB), (10000, 11 * GIB), (16384, 14 * GIB)], usable_bytes=20 * GIB
    )
    assert [t.value for t in chart.x_ticks] == [8192, 16384]
    assert len(chart.points) == 3


def test_crowded_context_labels_are_thinned():
    # 512 .. 262,144: nine doublings over 400 units, 44.4 each; "262,144" needs 7 × 10 + 12 = 82
    # units, so every second label is kept, counted back from the longest.
    lengths = [512 << k for k in range(10)]
    chart = memory_chart([(n, GIB) for n in lengths], usable_bytes=None)
    assert [t.value for t in chart.x_ticks] == [1024, 4096, 16384, 65536, 262144]
    # The last label, 70 units wide, would end at 464 + 35 = 499 > 496: it is centred at
    # 496 - 2 - 35 = 459 instead, its tick staying at 464.
    assert chart.x_ticks[-1] == Tick(value=262144, position=464, label_at=459)
    assert chart.x_ticks[0].label_position == chart.x_ticks[0].position


def test_a_batch_not_on_the_curve_gets_no_marker():
    chart = throughput_chart([(1, 30.0), (2, 58.0)], current_batch=3)
    assert chart.marker is None


def test_mismatched_series_are_refused():
    with pytest.raises(ValueError, match="as many y values"):
        memory_chart([], usable_bytes=None)


def _chart() -> Chart:
    return memory_chart(
        [(1024, 8 * GIB), (2048, 10 * GIB), (4096, 14 * GIB)],
        usable_bytes=int(22.5 * GIB),
        current=(2048, 10 * GIB),
    )


def test_partial_draws_inline_svg_that_scales():
    html = render_to_string(
        "calculator/_charts.jinja",
        {
            "memory_chart": _chart(),
            "speed_chart": throughput_chart([(1, 30.0), (2, 58.0)], current_batch=1),
        },
        using="jinja2",
    )
    assert html.count("<svg") == 2
    assert 'viewBox="0 0 496 300"' in html
    assert 'width="100%"' in html
    assert "<script" not in html
    assert 'class="limit"' in html
    assert 'class="current"' in html


def test_partial_localises_labels_but_not_coordinates():
    with translation.override("de"):
        html = render_to_string(
            "calculator/_charts.jinja", {"memory_chart": _chart()}, using="jinja2"
        )
    # 22.5 GiB usable is written the German way; the coordinates stay SVG numbers.
    assert "22,5" in html
    # Ticks 0, 10, 20, 30 GiB; the 30 GiB grid line sits at the top of the plot box.
    assert 'y1="28.0"' in html
    assert "2.048" in html  # the context tick, German thousands separator


def test_partial_draws_the_vllm_chart_with_its_limit():
    chart = concurrency_chart(RTX_3090_POOL, current=(20000, 1.56), longest=31232)
    html = render_to_string(
        "calculator/_charts.jinja", {"concurrency_chart": chart}, using="jinja2"
    )
    assert 'id="chart-concurrency"' in html
    assert 'id="chart-memory"' not in html  # vLLM's memory does not grow with the context
    assert 'class="beyond"' in html
    assert 'width="6.93"' in html
    assert "31,232" in html  # the limit's label and note
    assert "fits 1.56 requests at once" in html
    assert "vLLM does not start" in html


def test_partial_renders_nothing_without_charts():
    assert render_to_string("calculator/_charts.jinja", {}, using="jinja2").strip() == ""


# Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads of head_dim
# 4096 / 32 = 128, 131,072-token window): K and V of one token take 32 × 2 × 8 × 128 × 2 bytes
# = 131,072 B (128 KiB) in 16-bit, so a vLLM block of 16 tokens takes 2 MiB.
LLAMA_8B_KV_BYTES_PER_TOKEN = 32 * 2 * 8 * 128 * 2
MIB = 1 << 20


@pytest.mark.django_db
def test_vllm_charts_the_requests_its_fixed_pool_holds_not_memory(client):
    response = client.get(
        "/?model=Llama+3.1+8B&runtime=vllm&seq=20000&batched=20000&max_seqs=256&gpu=rtx-3090-24gb"
    )
    assert response.status_code == 200
    assert "memory_chart" not in response.context
    chart = response.context["concurrency_chart"]
    # The pool the page prints ("Available KV cache memory"), cut into 2 MiB blocks; a request of
    # L tokens takes ceil(L / 16) of them, so the pool holds blocks / ceil(L / 16) requests.
    pool_bytes = response.context["result"].vllm.kv_cache
    blocks = pool_bytes // (16 * LLAMA_8B_KV_BYTES_PER_TOKEN)
    assert blocks * 2 * MIB <= pool_bytes < (blocks + 1) * 2 * MIB
    by_length = {point.value_x: point.value_y for point in chart.points}
    for length in (2048, 4096, 8192, 16384, 20000, 32768):
        assert by_length[length] == round(blocks / -(-length // 16), 2)
    # The chart's points at the table's lengths are the table's figures.
    for length, requests in response.context["vllm_levers"]["concurrency"]:
        assert by_length[length] == requests
    assert chart.marker.value_x == 20000
    # vLLM refuses to start once one request needs more blocks than the pool has.
    assert chart.limit_x.value == blocks * 16
    assert chart.limit is None
    page = response.content.decode()
    assert 'id="chart-concurrency"' in page
    assert 'id="chart-memory"' not in page
    assert "vLLM does not start" in page


@pytest.mark.django_db
def test_llama_cpp_memory_grows_by_the_kv_cache_of_every_slot(client):
    response = client.get(
        "/?model=Llama+3.1+8B&runtime=llama_cpp&gpu=rtx-4090-24gb&seq=2048&batch=4"
    )
    chart = response.context["memory_chart"]
    assert response.context["chart_slots"] == 4
    by_length = {point.value_x: point.value_y for point in chart.points}
    # llama-server allocates -c = 4 slots × the context at load: from 2,048 to 4,096 tokens per
    # slot its f16 KV buffer grows by 4 × 2,048 × 128 KiB = 1 GiB. With flash attention (the
    # default) the compute buffer stays the output head's 4 × 512 × (128,256 + 4,096) bytes at
    # both lengths, so the total grows by exactly that (a straight line through the chosen point
    # would scale the compute buffer too).
    assert (by_length[4096] - by_length[2048]) * GIB == 4 * 2048 * LLAMA_8B_KV_BYTES_PER_TOKEN
    assert chart.marker.value_x == 2048
    assert chart.marker.value_y * GIB == response.context["result"].total_bytes
    page = response.content.decode()
    assert "context per slot (tokens)" in page
    assert "4 slots of 2,048 tokens" in page


@pytest.mark.parametrize("top", [1e-11, 3.2e-12, 4.7e-300, 7.5, 2.2e5, 1e300])
def test_ticks_are_finite_and_reach_the_top_at_any_scale(top):
    # Finding 1 of the review: tokens/s below 1e-10 made the step round to 0, and the tick
    # loop appended zeros until the worker was killed. At most count + 1 steps, each i · step.
    ticks = linear_ticks(top)
    assert len(ticks) <= 6
    assert ticks[0] == 0
    assert ticks[-1] >= top * (1 - 1e-9)
    assert all(b > a for a, b in itertools.pairwise(ticks))


def test_a_throughput_chart_of_tiny_rates_is_drawn():
    # Rates of 10⁻¹¹ tokens/s (what a 10¹² hidden size gave before configs were bounded):
    # a step of 2.5·10⁻¹² (hand: nice_step(10⁻¹¹, 4)), four intervals.
    chart = throughput_chart([(1, 1e-11), (2, 2e-11)])
    assert [t.value for t in chart.y_ticks] == [0, 5e-12, 1e-11, 1.5e-11, 2e-11]

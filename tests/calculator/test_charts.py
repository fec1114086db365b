"""Chart geometry (calculator/charts.py) against points worked out by hand, and the SVG partial.

The default frame: viewBox 640 × 360, plot box from x = 72 to 616 (544 wide) and y = 24 to 304
(280 high). x is base-2 logarithmic, y linear from zero to the top "nice" tick.
"""

import pytest
from django.template.loader import render_to_string
from django.utils import translation

from calculator.charts import (
    GIB,
    Chart,
    Point,
    Tick,
    linear_ticks,
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
    assert chart.marker == Point(value_x=2048, value_y=10, x=264, y=128)
    assert [(t.value, t.position) for t in chart.y_ticks] == [
        (0, 228),
        (5, 178),
        (10, 128),
        (15, 78),
        (20, 28),
    ]
    assert chart.y_places == 0
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
        "calculator/_charts.html",
        {
            "memory_chart": _chart(),
            "speed_chart": throughput_chart([(1, 30.0), (2, 58.0)], current_batch=1),
        },
    )
    assert html.count("<svg") == 2
    assert 'viewBox="0 0 496 300"' in html
    assert 'width="100%"' in html
    assert "<script" not in html
    assert 'class="limit"' in html
    assert 'class="current"' in html


def test_partial_localises_labels_but_not_coordinates():
    with translation.override("de"):
        html = render_to_string("calculator/_charts.html", {"memory_chart": _chart()})
    # 22.5 GiB usable is written the German way; the coordinates stay SVG numbers.
    assert "22,5" in html
    # Ticks 0, 10, 20, 30 GiB; the 30 GiB grid line sits at the top of the plot box.
    assert 'y1="28.0"' in html
    assert "2.048" in html  # the context tick, German thousands separator


def test_partial_renders_nothing_without_charts():
    assert render_to_string("calculator/_charts.html", {}).strip() == ""

"""Geometry of the result page's server-rendered SVG charts (no Django, no JavaScript).

Each chart is a plain dataclass in SVG user units: the plot box inside a fixed viewBox, the data
points mapped into it, axis ticks that carry their values (the template formats and translates
them), and the extras a chart needs (the GPU's usable-memory line, the current point). The
template (templates/calculator/_charts.html) only draws what is here, so the geometry is tested
without rendering.

Axes: context length and batch size double from point to point, so their axis is base-2
logarithmic; memory and tokens/s start at zero on a linear axis with "nice" round ticks
(Heckbert, "Nice numbers for graph labels", Graphics Gems, 1990).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

GIB = 1 << 30

# A small viewBox, so that 18-unit text still reads at about 12 px when the SVG is scaled down to
# a 330-pixel phone column; the plot box inside is 400 × 200.
WIDTH = 496
HEIGHT = 300
MARGIN_LEFT = 64
MARGIN_RIGHT = 32
MARGIN_TOP = 28
MARGIN_BOTTOM = 72


@dataclass(frozen=True)
class Tick:
    value: float
    position: float


@dataclass(frozen=True)
class Point:
    value_x: float
    value_y: float
    x: float
    y: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: float
    top: float
    right: float
    bottom: float
    points: tuple[Point, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    marker: Point | None = None
    limit: Tick | None = None

    @property
    def y_places(self) -> int:
        """Decimals the y tick labels need: none when every tick is a whole number."""
        return 0 if all(float(t.value).is_integer() for t in self.y_ticks) else 1

    @property
    def path(self) -> str:
        """The data as an SVG path ("M x y L x y ...")."""
        steps = (f"{'M' if i == 0 else 'L'}{p.x:.1f} {p.y:.1f}" for i, p in enumerate(self.points))
        return " ".join(steps)


def nice_step(span: float, count: int) -> float:
    """The round step (1, 2, 2.5 or 5 × 10^k) that cuts ``span`` into about ``count`` parts."""
    if span <= 0:
        return 1.0
    rough = span / count
    power = 10.0 ** math.floor(math.log10(rough))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= rough:
            return factor * power
    return 10 * power


def linear_ticks(top: float, count: int = 4) -> list[float]:
    """0, step, 2·step ... up to the first tick at or above ``top``."""
    step = nice_step(top, count)
    ticks = [0.0]
    while ticks[-1] < top - 1e-9 * step:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _frame(width: int, height: int) -> tuple[float, float, float, float]:
    return MARGIN_LEFT, MARGIN_TOP, width - MARGIN_RIGHT, height - MARGIN_BOTTOM


def _log2_scale(values: Sequence[float], left: float, right: float) -> tuple[float, float]:
    low, high = math.log2(min(values)), math.log2(max(values))
    span = high - low or 1.0
    return low, (right - left) / span


def line_chart(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    y_top: float | None = None,
    marker: tuple[float, float] | None = None,
    limit: float | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Points (x on a base-2 log axis, y on a linear axis from zero) in a ``width`` × ``height``
    viewBox. ``limit`` draws a horizontal line at that y value; ``marker`` ringed point."""
    if not xs or len(xs) != len(ys):
        raise ValueError("a chart needs as many y values as x values, at least one")
    left, top, right, bottom = _frame(width, height)
    highest = max([*ys, *([limit] if limit is not None else []), *([marker[1]] if marker else [])])
    y_ticks = linear_ticks(y_top if y_top is not None else highest)
    y_max = y_ticks[-1] or 1.0
    low, per_doubling = _log2_scale([*xs, *([marker[0]] if marker else [])], left, right)

    def place(x: float, y: float) -> Point:
        return Point(
            value_x=x,
            value_y=y,
            x=round(left + (math.log2(x) - low) * per_doubling, 2),
            y=round(bottom - y / y_max * (bottom - top), 2),
        )

    points = tuple(place(x, y) for x, y in zip(xs, ys, strict=True))
    return Chart(
        width=width,
        height=height,
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        points=points,
        x_ticks=tuple(Tick(value=p.value_x, position=p.x) for p in points),
        y_ticks=tuple(
            Tick(value=v, position=round(bottom - v / y_max * (bottom - top), 2)) for v in y_ticks
        ),
        marker=place(*marker) if marker else None,
        limit=Tick(value=limit, position=round(bottom - limit / y_max * (bottom - top), 2))
        if limit is not None
        else None,
    )


def memory_chart(
    points: Sequence[tuple[int, int]],
    *,
    usable_bytes: int | None,
    current: tuple[int, int] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Memory per GPU (bytes, shown in GiB) against context length, with the GPU's usable
    memory as a horizontal line and the chosen context marked. Values on the chart are GiB."""
    return line_chart(
        [length for length, _ in points],
        [size / GIB for _, size in points],
        marker=(current[0], current[1] / GIB) if current else None,
        limit=usable_bytes / GIB if usable_bytes else None,
        width=width,
        height=height,
    )


def throughput_chart(
    points: Sequence[tuple[int, float]],
    *,
    current_batch: int | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Decode tokens/s of all sequences together against the batch size (concurrency)."""
    xs = [batch for batch, _ in points]
    ys = [rate for _, rate in points]
    marker = None
    if current_batch is not None and current_batch in xs:
        marker = (current_batch, ys[xs.index(current_batch)])
    return line_chart(xs, ys, marker=marker, width=width, height=height)

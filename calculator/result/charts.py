"""Geometry of the result page's server-rendered SVG charts (no Django, no JavaScript).

Each chart is a plain dataclass in SVG user units: the plot box inside a fixed viewBox, the data
points mapped into it, axis ticks that carry their values (the template formats and translates
them), and the extras a chart needs (the GPU's usable-memory line, the current point). The
template (templates/jinja2/calculator/_charts.jinja) only draws what is here, so the geometry is tested
without rendering.

Axes: context length and batch size double from point to point, so their axis is base-2
logarithmic, labelled at powers of two only and no closer than a label's width; memory and
tokens/s start at zero on a linear axis with "nice" round ticks (Heckbert, "Nice numbers for graph
labels", Graphics Gems, 1990). vLLM's concurrency falls as 1 / context over several decades, so
its axis is base-10 logarithmic with ticks at 1, 2 and 5 × 10^k.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

GIB = 1 << 30

# A small viewBox, so that 18-unit text still reads at about 12 px when the SVG is scaled down to
# a 330-pixel phone column; the plot box inside is 400 × 200.
WIDTH = 496
# Width of one digit or group separator of an 18-unit tick label (about 0.55 em), and the gap
# kept between two labels: x ticks closer than that are thinned out.
LABEL_CHAR_WIDTH = 10.0
LABEL_GAP = 12.0
HEIGHT = 300
MARGIN_LEFT = 64
MARGIN_RIGHT = 32
MARGIN_TOP = 28
MARGIN_BOTTOM = 72


@dataclass(frozen=True)
class Tick:
    value: float
    position: float
    # Where the label is centred when that differs from the tick (the last x label, moved left
    # so that it ends inside the viewBox).
    label_at: float | None = None

    @property
    def label_position(self) -> float:
        return self.position if self.label_at is None else self.label_at

    @property
    def places(self) -> int:
        """Decimals this tick's label needs (0.25 → 2, 5 → 0), at most three."""
        for places in range(3):
            if abs(self.value - round(self.value, places)) < 1e-9:
                return places
        return 3


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
    # A limit on the x axis (vLLM's longest context that starts): a vertical line, the region
    # past it shaded, its value written on the side where the label has room.
    limit_x: Tick | None = None

    @property
    def limit_label_y(self) -> float:
        """Baseline of the horizontal limit's label: above the line, or below it when the line
        runs along the top, where the axis unit is written."""
        if self.limit is None:
            return 0.0
        if self.limit.position - self.top >= 24:
            return self.limit.position - 6
        return self.limit.position + 20

    @property
    def plot_height(self) -> float:
        return self.bottom - self.top

    @property
    def beyond_width(self) -> float:
        """Width of the shaded region right of the x limit (where the chart says "no")."""
        return round(self.right - self.limit_x.position, 2) if self.limit_x else 0.0

    @property
    def limit_x_label_end(self) -> bool:
        """Write the x limit's label to the left of its line (it sits in the right half)."""
        return self.limit_x is not None and self.limit_x.position > (self.left + self.right) / 2

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
    """0, step, 2·step ... up to the first tick at or above ``top``: at most ``count`` + 1
    ticks whatever the scale, each ``i · step`` (adding steps, or rounding them to a fixed
    number of decimals, loses a step of 10⁻¹¹ altogether)."""
    if not math.isfinite(top) or top <= 0:
        return [0.0, 1.0]
    step = nice_step(top, count)
    steps = min(max(1, math.ceil(top / step - 1e-9)), count + 1)
    # 12 significant digits: 3 × 0.1 is 0.30000000000000004 in binary, and the label says 0.3.
    return [float(f"{index * step:.12g}") for index in range(steps + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """Ticks of a base-10 logarithmic axis from the tick at or below ``low`` to the one at or
    above ``high``: 1, 2 and 5 × 10^k when that makes six ticks or fewer (a short range still
    gets three or more), otherwise powers of ten alone."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 or high < low:
        raise ValueError("a logarithmic axis needs finite positive values")
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for factors in ((1, 2, 5), (1,)):
        candidates = [
            round(factor * 10.0**power, 10)
            for power in range(first, last + 1)
            for factor in factors
        ]
        below = max(v for v in candidates if v <= low * (1 + 1e-9))
        above = min(v for v in candidates if v >= high * (1 - 1e-9))
        ticks = [v for v in candidates if below <= v <= above]
        if len(ticks) <= 6:
            break
    if len(ticks) == 1:
        ticks.append(round(ticks[0] * 10, 10))
    return ticks


def _frame(width: int, height: int) -> tuple[float, float, float, float]:
    return MARGIN_LEFT, MARGIN_TOP, width - MARGIN_RIGHT, height - MARGIN_BOTTOM


def _log2_scale(values: Sequence[float], left: float, right: float) -> tuple[float, float]:
    low, high = math.log2(min(values)), math.log2(max(values))
    span = high - low or 1.0
    return low, (right - left) / span


def _label_width(value: float) -> float:
    """Approximate width of a tick label such as "131,072" (digits and group separators)."""
    return len(f"{value:,.0f}") * LABEL_CHAR_WIDTH


def _x_ticks(points: Sequence[Point]) -> tuple[Tick, ...]:
    """The points at powers of two (a chosen context of 10,000 stays a point on the curve, not
    a label between 8,192 and 16,384), every n-th of them so that no two labels overlap."""
    ticks = [Tick(value=p.value_x, position=p.x) for p in points if math.log2(p.value_x) % 1 == 0]
    if len(ticks) < 2:
        return tuple(ticks or [Tick(value=p.value_x, position=p.x) for p in points])
    spacing = min(b.position - a.position for a, b in itertools.pairwise(ticks))
    widest = max(_label_width(t.value) for t in ticks) + LABEL_GAP
    stride = max(1, math.ceil(widest / spacing)) if spacing > 0 else len(ticks)
    # Keep the last (longest) label: it is the one the eye looks for.
    return tuple(ticks[::-1][::stride][::-1])


def _inside(ticks: tuple[Tick, ...], width: int) -> tuple[Tick, ...]:
    """Move the last x label left until it ends inside the viewBox."""
    if not ticks:
        return ticks
    last = ticks[-1]
    room = width - 2 - _label_width(last.value) / 2
    if last.position <= room:
        return ticks
    return (*ticks[:-1], Tick(value=last.value, position=last.position, label_at=round(room, 2)))


def line_chart(
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    y_top: float | None = None,
    y_log: bool = False,
    marker: tuple[float, float] | None = None,
    limit: float | None = None,
    limit_x: float | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Points (x on a base-2 log axis; y on a linear axis from zero, or with ``y_log`` a base-10
    log axis) in a ``width`` × ``height`` viewBox. ``limit`` draws a horizontal line at that y
    value, ``limit_x`` a vertical one at that x value; ``marker`` a ringed point."""
    if not xs or len(xs) != len(ys):
        raise ValueError("a chart needs as many y values as x values, at least one")
    left, top, right, bottom = _frame(width, height)
    shown = [*ys, *([limit] if limit is not None else []), *([marker[1]] if marker else [])]
    if y_log:
        if min(shown) <= 0:
            raise ValueError("a logarithmic axis needs positive values")
        y_ticks = log_ticks(min(shown), max(shown))
        y_low, y_span = math.log10(y_ticks[0]), math.log10(y_ticks[-1] / y_ticks[0])

        def y_of(y: float) -> float:
            return round(bottom - (math.log10(y) - y_low) / y_span * (bottom - top), 2)

    else:
        y_ticks = linear_ticks(y_top if y_top is not None else max(shown))
        y_max = y_ticks[-1] or 1.0

        def y_of(y: float) -> float:
            return round(bottom - y / y_max * (bottom - top), 2)

    xs_shown = [*xs, *([marker[0]] if marker else []), *([limit_x] if limit_x else [])]
    low, per_doubling = _log2_scale(xs_shown, left, right)

    def x_of(x: float) -> float:
        return round(left + (math.log2(x) - low) * per_doubling, 2)

    def place(x: float, y: float) -> Point:
        return Point(value_x=x, value_y=y, x=x_of(x), y=y_of(y))

    points = tuple(place(x, y) for x, y in zip(xs, ys, strict=True))
    return Chart(
        width=width,
        height=height,
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        points=points,
        x_ticks=_inside(_x_ticks(points), width),
        y_ticks=tuple(Tick(value=v, position=y_of(v)) for v in y_ticks),
        marker=place(*marker) if marker else None,
        limit=Tick(value=limit, position=y_of(limit)) if limit is not None else None,
        limit_x=Tick(value=limit_x, position=x_of(limit_x)) if limit_x else None,
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


def concurrency_chart(
    points: Sequence[tuple[int, float]],
    *,
    current: tuple[int, float] | None = None,
    longest: int | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart | None:
    """vLLM's maximum concurrency (requests of ``max_model_len`` tokens its fixed KV-cache pool
    holds) against ``max_model_len``, with the chosen length marked and ``longest``, the last
    length at which one request still fits (past it vLLM refuses to start), as a vertical limit.
    Both axes are logarithmic: concurrency is blocks ÷ ceil(length / block size), about 1 / length.
    Lengths whose pool holds no request at all (0×) have no place on a log axis and are left out;
    ``None`` when nothing is left to draw."""
    kept = [(length, n) for length, n in points if n > 0]
    if len(kept) < 2:
        return None
    if current is not None and current[1] <= 0:
        current = None
    return line_chart(
        [length for length, _ in kept],
        [n for _, n in kept],
        y_log=True,
        marker=current,
        limit_x=longest or None,
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

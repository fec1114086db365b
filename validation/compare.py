"""Measured (validation/measurements.json) vs estimated peak_allocated_bytes, per case and mode.

Runs with the project's own environment (no torch needed):
    .venv/bin/python validation/compare.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calculator.estimator import EstimateRequest, estimate  # noqa: E402

MEASUREMENTS = ROOT / "validation" / "measurements.json"
CONFIGS = ROOT / "validation" / "configs"


def rows() -> list[dict[str, object]]:
    data = json.loads(MEASUREMENTS.read_text())
    out = []
    for case in data["cases"]:
        if not case.get("peak_bytes"):
            continue
        config = json.loads((CONFIGS / f"{case['config']}.json").read_text())
        request = EstimateRequest.model_validate({"model": {"config": config}, **case["request"]})
        estimated = estimate(request).peak_allocated_bytes
        measured = int(case["peak_bytes"])
        out.append(
            {
                "id": case["id"],
                "mode": case["request"]["mode"],
                "measured": measured,
                "estimated": estimated,
                "error": (estimated - measured) / measured,
            }
        )
    return out


def summary(table: list[dict[str, object]]) -> dict[str, tuple[int, float, float]]:
    by_mode: dict[str, list[float]] = {}
    for row in table:
        by_mode.setdefault(str(row["mode"]), []).append(abs(float(row["error"])))  # type: ignore[arg-type]
    by_mode["all"] = [abs(float(row["error"])) for row in table]  # type: ignore[arg-type]
    return {mode: (len(e), statistics.median(e), max(e)) for mode, e in by_mode.items() if e}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()
    table = rows()
    gib = 1 << 30
    if args.markdown:
        print("| case | measured GiB | estimated GiB | error |\n|---|---:|---:|---:|")
        for row in table:
            print(
                f"| {row['id']} | {int(row['measured']) / gib:.2f} | "  # type: ignore[call-overload]
                f"{int(row['estimated']) / gib:.2f} | {float(row['error']):+.1%} |"  # type: ignore[arg-type, call-overload]
            )
        print("\n| mode | cases | median abs error | worst abs error |\n|---|---:|---:|---:|")
        for mode, (count, median, worst) in summary(table).items():
            print(f"| {mode} | {count} | {median:.1%} | {worst:.1%} |")
        return
    for row in table:
        print(
            f"{row['id']:<70} measured {int(row['measured']) / gib:9.2f} GiB  "  # type: ignore[call-overload]
            f"estimated {int(row['estimated']) / gib:9.2f} GiB  error {float(row['error']):+7.1%}"  # type: ignore[arg-type, call-overload]
        )
    print()
    for mode, (count, median, worst) in summary(table).items():
        print(f"{mode:<14} {count:3d} cases   median |error| {median:6.1%}   worst {worst:6.1%}")


if __name__ == "__main__":
    main()

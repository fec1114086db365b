"""Score the estimator against published memory figures of training stacks.

``validation/published/training_stacks.json`` lists each figure with its source, the setup it
states and the estimator request that describes it. ``rows`` returns one row per figure (ours,
theirs, relative error); ``summary`` the median and worst absolute error per stack over the
scored rows. Run ``python -m validation.training_stacks`` for the table in README.md.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from calculator.estimator import EstimateRequest, estimate
from validation.runtime_logs import preset_configs

PUBLISHED = Path(__file__).resolve().parent / "published" / "training_stacks.json"
UNITS = {"GB": 1e9, "GiB": float(1 << 30)}


def load() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(PUBLISHED.read_text())["rows"]
    return data


def rows() -> list[dict[str, Any]]:
    out = []
    for entry in load():
        config = preset_configs()[entry["model_slug"]]
        request = EstimateRequest.model_validate({"model": {"config": config}, **entry["request"]})
        result = estimate(request)
        ours_bytes = (
            result.total_bytes if entry["metric"] == "total" else result.peak_allocated_bytes
        )
        theirs = float(entry["published"])
        ours = ours_bytes / UNITS[entry["unit"]]
        out.append(
            {
                "id": entry["id"],
                "stack": entry["stack"],
                "ours": ours,
                "theirs": theirs,
                "unit": entry["unit"],
                "error": (ours - theirs) / theirs,
                "scored": entry.get("scored", True),
                "note": entry.get("note", ""),
            }
        )
    return out


def summary(table: list[dict[str, Any]]) -> dict[str, tuple[int, float, float]]:
    by_stack: dict[str, list[float]] = {}
    for row in table:
        if row["scored"]:
            by_stack.setdefault(row["stack"], []).append(abs(row["error"]))
    return {
        stack: (len(errors), statistics.median(errors), max(errors))
        for stack, errors in by_stack.items()
    }


def main() -> None:
    table = rows()
    print("| figure | published | ours | error |\n|---|---:|---:|---:|")
    for row in table:
        mark = "" if row["scored"] else " (not scored)"
        print(
            f"| {row['id']}{mark} | {row['theirs']:.2f} {row['unit']} | "
            f"{row['ours']:.2f} {row['unit']} | {row['error']:+.1%} |"
        )
    print("\n| stack | figures | median error | worst error |\n|---|---:|---:|---:|")
    for stack, (count, median, worst) in summary(table).items():
        print(f"| {stack} | {count} | {median:.1%} | {worst:.1%} |")


if __name__ == "__main__":
    main()

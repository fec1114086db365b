"""Count transformers' parameters for every catalogue preset and merge them into the dataset.

    validation/.venv/bin/python validation/count_presets.py

Writes each presets/models/*.json entry's config to a temporary <slug>.json, runs
count_params.py on them, and stores the counts as "preset:<slug>" in
tests/estimator/data/transformers_param_counts.json.
"""

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "tests" / "estimator" / "data" / "transformers_param_counts.json"
sys.path.insert(0, str(ROOT / "validation"))

import count_params  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for family in sorted((ROOT / "presets" / "models").glob("*.json")):
            for preset in json.loads(family.read_text())["presets"]:
                path = Path(tmp) / f"{preset['slug']}.json"
                path.write_text(json.dumps(preset["config"]))
                paths.append(str(path))
        out = Path(tmp) / "counts.json"
        count_params.main(["--no-defaults", "--out", str(out), *paths])
        counts = json.loads(out.read_text())["models"]
    dataset = json.loads(DATASET.read_text())
    dataset["models"] = {k: v for k, v in dataset["models"].items() if not k.startswith("preset:")}
    dataset["models"].update({f"preset:{slug}": row for slug, row in counts.items()})
    dataset["command_presets"] = "validation/.venv/bin/python validation/count_presets.py"
    DATASET.write_text(json.dumps(dataset, indent=1) + "\n")
    print(f"{len(counts)} presets counted into {DATASET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""How far the generic (Llama-shaped) reader is from transformers on families it does not know.

    .venv/bin/python validation/generic_reader_error.py

For one config of every family in the param-count dataset that is not Llama-shaped
(``model_type`` not llama/mistral/yi/granite/smollm3), rename its model_type (and its text
config's) to an unknown one, drop ``architectures``, read it as the app then does (generic
reader; the text part of a multimodal config), and compare its parameter count with transformers' exact count from
tests/estimator/data/transformers_param_counts.json. Prints the median and worst relative
error (one config per family, the first in name order) and the configs it refuses.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calculator.estimator.architecture import Architecture, ConfigError  # noqa: E402

LLAMA_SHAPED = {"llama", "mistral", "yi", "granite", "smollm3"}


def configs() -> dict[str, dict]:
    out = {}
    for path in sorted((ROOT / "validation" / "configs").glob("*.json")):
        out[path.stem] = json.loads(path.read_text())
    for path in sorted((ROOT / "presets" / "models").glob("*.json")):
        for entry in json.loads(path.read_text())["presets"]:
            out[f"preset:{entry['slug']}"] = entry["config"]
    return out


def main() -> None:
    data = json.loads((ROOT / "tests/estimator/data/transformers_param_counts.json").read_text())
    sources = configs()
    per_family: dict[str, tuple[str, float | None]] = {}
    for name in sorted(data["models"]):
        family = data["models"][name]["model_type"]
        if family in LLAMA_SHAPED or family in per_family or name not in sources:
            continue
        config = {**sources[name], "model_type": "unknown-family"}
        config.pop("architectures", None)
        if isinstance(config.get("text_config"), dict):
            config["text_config"] = {**config["text_config"], "model_type": "unknown-text"}
        try:
            count = Architecture.from_hf_config(config).params_total
        except ConfigError as error:
            per_family[family] = (name, None)
            print(f"{family:18s} {name:32s} refused: {error}")
            continue
        exact = data["models"][name]["params_total"]
        error = (count - exact) / exact
        per_family[family] = (name, error)
        print(f"{family:18s} {name:32s} {100 * error:+7.1f}%")
    errors = [abs(e) for _n, e in per_family.values() if e is not None]
    refused = sum(1 for _n, e in per_family.values() if e is None)
    print(
        f"\n{len(per_family)} families: {len(errors)} read, {refused} refused; "
        f"median |error| {100 * statistics.median(errors):.1f}%, worst {100 * max(errors):.1f}%"
    )


if __name__ == "__main__":
    main()

"""Parameter counts equal what transformers builds.

Expected values: tests/estimator/data/transformers_param_counts.json, produced by
validation/count_params.py (AutoModelForCausalLM.from_config on the meta device, transformers
5.24.0); and the counts in ../shared/data/model_configs.json (summed from the published configs,
see its README), which are independent of this code.
"""

import json
from pathlib import Path

import pytest

from calculator.estimator import Architecture
from tests.conftest import VALIDATION_CONFIGS

DATA = json.loads((Path(__file__).parent / "data" / "transformers_param_counts.json").read_text())
PRESETS = Path(__file__).resolve().parents[2] / "presets" / "models"


def _preset_configs() -> dict[str, dict]:
    configs = {}
    for path in sorted(PRESETS.glob("*.json")):
        for entry in json.loads(path.read_text())["presets"]:
            configs[f"preset:{entry['slug']}"] = entry["config"]
    return configs


def _config_for(name: str) -> dict:
    if name.startswith("preset:"):
        return _preset_configs()[name]
    return json.loads((VALIDATION_CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize("name", sorted(DATA["models"]))
def test_params_total_equals_transformers(name):
    expected = DATA["models"][name]["params_total"]
    assert Architecture.from_hf_config(_config_for(name)).params_total == expected


def test_dataset_covers_every_listed_architecture():
    model_types = {entry["model_type"] for entry in DATA["models"].values()}
    wanted = {"llama", "mistral", "qwen2", "qwen3", "gemma2", "phi3", "gpt2", "falcon", "mixtral"}
    assert wanted <= model_types

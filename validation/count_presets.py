"""Count transformers' parameters for every catalogue preset and merge them into the dataset.

    validation/.venv/bin/python validation/count_presets.py            # presets/models
    validation/.venv/bin/python validation/count_presets.py --staged   # presets/staged

Writes each preset's config to a temporary <slug>.json, runs count_params.py on them, and stores
the counts as "preset:<slug>": presets/models/*.json into
tests/estimator/data/transformers_param_counts.json, presets/staged/*.json (families the
estimator does not read yet) into presets/staged/param_counts.json, with an "errors" entry for
every config transformers cannot build and why.

A config whose model_type transformers does not register but whose ``architectures`` names a
causal-LM class it does (Kimi K2: model_type "kimi_k2", DeepseekV3ForCausalLM) is counted as that
class's model_type; the row's notes say so. Staged presets are built with the class their
``architectures`` names when transformers has it (vision-language checkpoints:
...ForConditionalGeneration, vision tower included), else with AutoModelForCausalLM; the row's
"built_class" says which. An ``auto_map`` (remote code) is ignored when transformers registers
the model_type itself.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "tests" / "estimator" / "data" / "transformers_param_counts.json"
STAGED = ROOT / "presets" / "staged"
sys.path.insert(0, str(ROOT / "validation"))

import common  # noqa: E402
import count_params  # noqa: E402


def _by_architecture(config: dict) -> tuple[dict, str | None]:
    """Map an unregistered model_type onto the registered one its architectures class belongs to."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_type = config.get("model_type")
    if model_type in CONFIG_MAPPING_NAMES:
        return config, None
    for arch in config.get("architectures") or []:
        for registered, cls in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items():
            if cls == arch and registered in CONFIG_MAPPING_NAMES:
                note = (
                    f"model_type {model_type!r} is not registered in transformers; counted as "
                    f"{registered!r} because architectures names {arch}"
                )
                return {**config, "model_type": registered}, note
    return config, None


def _build_named_class(cfg, dtype, attn_implementation=None, device="cpu"):
    """Build the class the config's ``architectures`` names, as the published checkpoint loads."""
    import torch
    import transformers

    cls = None
    for arch in getattr(cfg, "architectures", None) or []:
        cls = getattr(transformers, arch, None)
        if cls is not None:
            break
    if cls is None:
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        )

        name = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(cfg.model_type)
        cls = getattr(transformers, name, None) if name else None
    if cls is None:
        return _BUILD_CAUSAL_LM(cfg, dtype, attn_implementation, device)
    with common.default_dtype(dtype), torch.device(device):
        model = cls._from_config(cfg, dtype=dtype)
    _LAST_CLASS.append(cls.__name__)
    return model


_BUILD_CAUSAL_LM = count_params.build_causal_lm
_LAST_CLASS: list[str] = []


def _registered(model_type: object) -> bool:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return model_type in CONFIG_MAPPING_NAMES


def _presets(directory: Path) -> list[dict]:
    presets = []
    for family in sorted(directory.glob("*.json")):
        if family.name == "param_counts.json":
            continue
        presets.extend(json.loads(family.read_text())["presets"])
    return presets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--staged", action="store_true", help="count presets/staged instead")
    args = parser.parse_args()
    directory = STAGED if args.staged else ROOT / "presets" / "models"
    with tempfile.TemporaryDirectory() as tmp:
        paths: list[str] = []
        notes: dict[str, list[str]] = {}
        for preset in _presets(directory):
            config, note = _by_architecture(preset["config"])
            if note:
                notes.setdefault(preset["slug"], []).append(note)
            if "auto_map" in config and _registered(config.get("model_type")):
                config = {k: v for k, v in config.items() if k != "auto_map"}
                notes.setdefault(preset["slug"], []).append(
                    "auto_map (remote code) ignored: transformers registers this model_type"
                )
            path = Path(tmp) / f"{preset['slug']}.json"
            path.write_text(json.dumps(config))
            paths.append(str(path))
        out = Path(tmp) / "counts.json"
        if args.staged:
            count_params.build_causal_lm = _build_named_class
            original_count = count_params.count

            def count_with_class(name: str) -> dict:
                row = original_count(name)
                row["built_class"] = _LAST_CLASS.pop() if _LAST_CLASS else "AutoModelForCausalLM"
                return row

            count_params.count = count_with_class
        count_params.main(["--no-defaults", "--out", str(out), *paths])
        result = json.loads(out.read_text())
    counts = result["models"]
    for slug, extra in notes.items():
        if slug in counts:
            counts[slug]["notes"] = extra + counts[slug].get("notes", [])
    rows = {f"preset:{slug}": row for slug, row in counts.items()}
    if args.staged:
        staged = {
            "transformers_version": result["transformers_version"],
            "torch_version": result["torch_version"],
            "command": "validation/.venv/bin/python validation/count_presets.py --staged",
            "method": result["method"],
            "models": rows,
            "errors": {f"preset:{k}": v for k, v in result.get("errors", {}).items()},
        }
        (STAGED / "param_counts.json").write_text(json.dumps(staged, indent=1) + "\n")
        print(f"{len(rows)} staged presets counted, {len(staged['errors'])} errors")
        return
    dataset = json.loads(DATASET.read_text())
    dataset["models"] = {k: v for k, v in dataset["models"].items() if not k.startswith("preset:")}
    dataset["models"].update(rows)
    dataset["command_presets"] = "validation/.venv/bin/python validation/count_presets.py"
    DATASET.write_text(json.dumps(dataset, indent=1) + "\n")
    print(f"{len(counts)} presets counted into {DATASET.relative_to(ROOT)}")
    if result.get("errors"):
        print("errors:", json.dumps(result["errors"], indent=1))


if __name__ == "__main__":
    main()

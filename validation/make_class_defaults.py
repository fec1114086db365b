"""Write the config-class defaults the family readers fill omitted fields from.

    validation/.venv/bin/python validation/make_class_defaults.py

For every ``model_type`` a family module registers (and every sub-config class those configs
nest: ``text_config``, ``vision_config``, ...), the dataclass field defaults of its
``configuration_<family>.py`` class in transformers 5.24.0: what ``from_pretrained`` takes for a
field a ``config.json`` leaves out. Only defaults declared on the class (or ``tie_word_embeddings``,
which the base class declares and many classes override), only JSON values, and ``None`` left out
(a reader treats an absent field and ``null`` alike; the class's ``__post_init__`` derives those,
and the reader mirrors that derivation). Also each class's ``attribute_map`` (an alias a config
may use for a field) and its sub-config keys with the model_type each builds by default.
Output: calculator/estimator/families/class_defaults.json (committed; the estimator has no
transformers).
"""

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "calculator" / "estimator" / "families" / "class_defaults.json"


def _json_value(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, bool | int | str):
        return True
    if isinstance(value, list | tuple):
        return all(_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_value(v) for k, v in value.items())
    return False


def _describe(cls: type, base_fields: set[str]) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in base_fields and field.name != "tie_word_embeddings":
            continue
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            continue
        if isinstance(value, tuple):
            value = list(value)
        if _json_value(value):
            defaults[field.name] = value
    sub_configs = {}
    for key, spec in (getattr(cls, "sub_configs_defaults", None) or {}).items():
        sub_type = getattr(spec, "model_type", None) or getattr(
            getattr(spec, "config_class", spec), "model_type", ""
        )
        config_class = getattr(spec, "config_class", spec)
        sub_configs[key] = {
            "model_type": sub_type,
            "optional": bool(getattr(spec, "optional", False)),
            # AutoConfig: the sub-config's own model_type picks its class; else the class is fixed.
            "auto": getattr(config_class, "__name__", "") == "AutoConfig",
        }
    return {
        "class": cls.__name__,
        "defaults": defaults,
        "attribute_map": dict(getattr(cls, "attribute_map", None) or {}),
        "sub_configs": sub_configs,
    }


def main() -> None:
    from transformers import PreTrainedConfig, __version__
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    registered = (
        subprocess.run(
            [
                str(ROOT / ".venv" / "bin" / "python"),
                "-c",
                "from calculator.estimator.families import known_model_types as k;"
                "print(' '.join(sorted(k())))",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        + sys.argv[1:]
    )
    base_fields = {f.name for f in dataclasses.fields(PreTrainedConfig)}
    table: dict[str, Any] = {}
    pending = [t for t in registered if t in CONFIG_MAPPING]
    while pending:
        model_type = pending.pop(0)
        if model_type in table or model_type not in CONFIG_MAPPING:
            continue
        entry = _describe(CONFIG_MAPPING[model_type], base_fields)
        table[model_type] = entry
        pending += [s["model_type"] for s in entry["sub_configs"].values() if s["model_type"]]
    document = {
        "transformers_version": __version__,
        "command": "validation/.venv/bin/python validation/make_class_defaults.py",
        "model_types": dict(sorted(table.items())),
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    print("wrote", OUT.relative_to(ROOT), len(table), "classes")


if __name__ == "__main__":
    main()

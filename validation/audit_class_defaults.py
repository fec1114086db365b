"""Does every family reader take transformers' config-class default for a field a config omits,
and honour each ``attribute_map`` alias? (issue 27)

    validation/.venv/bin/python validation/audit_class_defaults.py

For each registered ``model_type``: its default config (``CONFIG_MAPPING[type]().to_dict()``,
cleaned as ``make_defaults.py`` does, so derived values included); the estimator reads it whole,
then once without each field (transformers rebuilds the same model from that, taking the default
or deriving it again), and once with each ``attribute_map`` alias in place of its field (checked
first to set the field in transformers). Every reading must give the whole config's count; the
ones that do not are printed. Refusals of width, depth and head count are expected
(``class_defaults.DEFINING_FIELDS``) and left out. The estimator side runs in the app's
environment (.venv), as a subprocess.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHECK = r"""
import json, sys
from calculator.estimator import Architecture
from calculator.estimator.families.class_defaults import DEFINING_FIELDS
cases = json.load(open(sys.argv[1]))
def count(d):
    try:
        return Architecture.from_hf_config(d).params_total
    except Exception as error:
        return f"refused: {str(error)[:120]}"
for model_type, case in sorted(cases.items()):
    whole = count(case["config"])
    if isinstance(whole, str):
        print(f"{model_type}: the default config is {whole}")
        continue
    for field in case["config"]:
        if field == "model_type" or field in DEFINING_FIELDS:
            continue
        got = count({k: v for k, v in case["config"].items() if k != field})
        if got != whole:
            print(f"{model_type}: without {field!r}: {got} (whole: {whole})")
    for alias, (field, value) in case["aliases"].items():
        want = count({**case["config"], field: value})
        aliased = {k: v for k, v in case["config"].items() if k != field}
        aliased[alias] = value
        got = count(aliased)
        if got != want:
            print(f"{model_type}: alias {alias!r} for {field!r}: {got} (the field: {want})")
"""


def main() -> None:
    from transformers import PreTrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from validation.make_defaults import _clean

    registered = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c",
         "from calculator.estimator.families import known_model_types as k;"
         "print(' '.join(sorted(k())))"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    bookkeeping = set(PreTrainedConfig().to_dict()) | {"transformers_version", "dtype"}
    cases = {}
    for model_type in registered:
        if model_type not in CONFIG_MAPPING:
            continue
        cls = CONFIG_MAPPING[model_type]
        config = _clean(cls().to_dict(), bookkeeping)
        aliases = {}
        for alias, field in (getattr(cls, "attribute_map", None) or {}).items():
            value = config.get(field)
            if alias in config or not isinstance(value, int) or isinstance(value, bool):
                continue
            rebuilt = cls.from_dict(
                {**{k: v for k, v in config.items() if k != field}, alias: 2 * value}
            )
            if getattr(rebuilt, field, None) == 2 * value:  # transformers honours the alias
                aliases[alias] = (field, 2 * value)
        cases[model_type] = {"config": config, "aliases": aliases}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(cases, handle)
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", CHECK, handle.name], cwd=ROOT, check=True
    )


if __name__ == "__main__":
    main()

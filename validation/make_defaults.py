"""Write transformers' default config of a model_type as validation/configs/defaults-<type>.json.

    validation/.venv/bin/python validation/make_defaults.py gemma4_text afmoe ...

``CONFIG_MAPPING[model_type]()`` serialised with ``to_dict()``; the bookkeeping keys every
``PreTrainedConfig`` carries (dtype, id2label, output flags, transformers_version, ...) are
dropped, the model's own fields and the token ids kept, nested sub-configs treated the same way.
Non-finite floats (JSON has none) are dropped, which leaves transformers' own default. These
files are NOT published configs: SOURCES.md labels them so.
"""

import json
import math
import sys
from pathlib import Path
from typing import Any

KEEP = {"architectures", "model_type", "tie_word_embeddings", "bos_token_id", "eos_token_id"}
KEEP |= {"pad_token_id"}


def _clean(value: Any, bookkeeping: set[str]) -> Any:
    if isinstance(value, dict):
        cleaned = {}
        for key, item in value.items():
            if key in bookkeeping and key not in KEEP:
                continue
            if isinstance(item, float) and not math.isfinite(item):
                continue
            if isinstance(item, list) and any(
                isinstance(x, float) and not math.isfinite(x) for x in item
            ):
                continue
            cleaned[key] = _clean(item, bookkeeping)
        return cleaned
    return value


def main(model_types: list[str]) -> None:
    from transformers import PreTrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    bookkeeping = set(PreTrainedConfig().to_dict()) | {"transformers_version", "dtype"}
    out_dir = Path(__file__).resolve().parent / "configs"
    for model_type in model_types:
        config = CONFIG_MAPPING[model_type]().to_dict()
        path = out_dir / f"defaults-{model_type}.json"
        path.write_text(json.dumps(_clean(config, bookkeeping), indent=1) + "\n")
        print("wrote", path.name)


if __name__ == "__main__":
    main(sys.argv[1:])

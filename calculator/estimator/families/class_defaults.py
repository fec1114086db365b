"""What transformers takes for a field a ``config.json`` leaves out, before any reader reads it.

``from_pretrained`` builds the config class of the ``model_type``
(``transformers/models/<family>/configuration_<family>.py``, transformers 5.24.0): a field the
file omits takes the class's default, an ``attribute_map`` alias (``n_embd`` for ``hidden_size``)
sets the field it names, a legacy keyword its ``__post_init__`` converts (Falcon's ``n_embed``,
LFM2's ``block_ff_dim``) sets the new field, and each nested sub-config (``text_config``,
``vision_config``) is built from its own class the same way. ``with_class_defaults`` does the
same to the dict, so a family reader sees what the transformers config object holds and only
has to mirror the class's derivations (``__post_init__``) of what stays ``None``.

The defaults are data: ``class_defaults.json``, written by ``validation/make_class_defaults.py``
from the dataclass fields of each class.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

_TABLE = Path(__file__).with_name("class_defaults.json")

# Keywords a config class's ``__post_init__`` pops and converts into one of its fields
# (transformers 5.24.0). Each ``__post_init__`` sets the field from the old name whenever the
# old name is given, so the old name wins even over the field itself.
LEGACY_NAMES: dict[str, dict[str, str]] = {
    # configuration_bloom.py / configuration_falcon.py: ``n_embed = kwargs.pop("n_embed")``.
    "bloom": {"n_embed": "hidden_size"},
    "falcon": {"n_embed": "hidden_size"},
    # configuration_lfm2.py: ``kwargs.pop("tie_embedding")``, ``kwargs.pop("block_ff_dim")``.
    "lfm2": {"tie_embedding": "tie_word_embeddings", "block_ff_dim": "intermediate_size"},
    "lfm2_moe": {"tie_embedding": "tie_word_embeddings"},
    # configuration_nemotron_h.py: the ``mamba_*`` names of the first Nemotron-H checkpoints.
    "nemotron_h": {
        "mamba_n_groups": "n_groups",
        "mamba_d_conv": "conv_kernel",
        "mamba_expand": "expand",
        "mamba_conv_bias": "use_conv_bias",
    },
}


# The sizes that make a document a model's description: no published config leaves its width,
# depth or head count out, so a config without one is a fragment (a paste cut short), refused
# with the field's name rather than completed with the class's example model.
DEFINING_FIELDS = frozenset(
    {
        "hidden_size", "n_embd", "d_model",
        "num_hidden_layers", "n_layer", "n_layers", "num_layers",
        "num_attention_heads", "n_head", "n_heads",
    }
)  # fmt: skip


@cache
def _classes() -> dict[str, Any]:
    classes: dict[str, Any] = json.loads(_TABLE.read_text())["model_types"]
    return classes


def class_name(model_type: str) -> str | None:
    """The transformers config class of a model_type, where the table knows it."""
    entry = _classes().get(model_type)
    return entry["class"] if entry else None


def class_default(model_type: str, field: str) -> Any:
    """The default of one field of a model_type's config class (None: no default, or unknown)."""
    entry = _classes().get(model_type)
    return entry["defaults"].get(field) if entry else None


def with_class_defaults(config: Mapping[str, Any], model_type: str | None = None) -> dict[str, Any]:
    """``config`` as transformers' config class of ``model_type`` (default: the config's own)
    holds it: aliases and legacy names moved onto their fields, omitted fields at the class's
    default (except the ``DEFINING_FIELDS``), sub-configs treated the same way with their own
    classes. A model_type the table does not know comes back unchanged."""
    raw = dict(config)
    entry = _classes().get(model_type or str(raw.get("model_type") or ""))
    if entry is None:
        return raw
    for alias, field in entry["attribute_map"].items():
        if raw.get(field) is None and raw.get(alias) is not None:
            raw[field] = raw[alias]
    for old, field in LEGACY_NAMES.get(model_type or str(raw.get("model_type")), {}).items():
        if raw.get(old) is not None:
            raw[field] = raw[old]
    for field, value in entry["defaults"].items():
        if field not in raw and field not in DEFINING_FIELDS:
            raw[field] = value
    for key, spec in entry["sub_configs"].items():
        sub = raw.get(key)
        if isinstance(sub, Mapping):
            own = str(sub.get("model_type") or "")
            sub_type = own if spec.get("auto") and own in _classes() else spec["model_type"]
            raw[key] = with_class_defaults({"model_type": sub_type, **sub}, sub_type)
            if not own:
                # The reader tells a sub-config without model_type by its absence.
                raw[key].pop("model_type", None)
    return raw

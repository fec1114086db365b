"""What any model description may hold: the limits that keep every estimate finite and cheap.

One set of limits for every way a model arrives: a pasted ``config.json``, a Hugging Face Hub
import, an admin's preset, the API's ``{"config": …}``, the CLI and the custom shape. They sit
far beyond any published model (the largest configs of 2026 have under 200 layers, widths under
32,768 and vocabularies under 300,000; DeepSeek V3's 671 B parameters are 6.7·10¹¹) and exist for
hostile or mistyped input: a width of 10¹² or a count past 2⁶³ must be refused with a message
naming the field, not computed into floats that overflow, charts whose ticks vanish, or database
rows no column can hold.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

# Total parameters of a model (the custom shape's ``params_billion`` bound, in parameters).
MAX_PARAMS_BILLION = 100_000.0
MAX_PARAMS = int(MAX_PARAMS_BILLION * 1e9)
MAX_LAYERS = 10_000
MAX_SEQ_LEN = 10_000_000
MAX_BATCH = 1_000_000
MAX_GPUS = 65_536
# One GPU's memory: the page's "my card's memory" bound (100,000 GB), in bytes.
MAX_GPU_MEMORY_BYTES = 100_000 * 2**30

# Per-field maxima of integer config fields, by the names configs use for them; the same bounds
# as the custom shape's fields (schemas.CustomModel).
_WIDTHS = ("hidden_size", "n_embd", "d_model", "embed_dim", "dim")
_HEADS = (
    "num_attention_heads",
    "n_head",
    "num_heads",
    "num_key_value_heads",
    "n_kv_heads",
    "num_kv_heads",
    "multi_query_group_num",
)
_MLP = (
    "intermediate_size",
    "ffn_dim",
    "n_inner",
    "ffn_hidden_size",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
)
_EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
CONFIG_FIELD_MAXIMA: dict[str, int] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers", "depth"), MAX_LAYERS),
    **dict.fromkeys(_WIDTHS, 1_000_000),
    **dict.fromkeys(_HEADS, 10_000),
    "head_dim": 100_000,
    **dict.fromkeys(_MLP, 10_000_000),
    "vocab_size": 100_000_000,
    **dict.fromkeys(_EXPERTS, 100_000),
}
# Any other integer a reader takes from a config: exactly representable as a float (and in
# JavaScript), so no arithmetic on it can overflow.
MAX_CONFIG_INTEGER = 2**53 - 1

# The document itself. Published configs nest four or five levels (quantization_config →
# config_groups → group_0 → weights); NUL characters appear in none (PostgreSQL's jsonb refuses
# them). Integers are refused only past what a float can hold (Python's float() fails past
# 1.8·10³⁰⁸): PostgreSQL hands a stored 1e+308 (Nemotron-H's time_step_limit) back as a
# 309-digit integer, and the fields the readers use have maxima of their own.
MAX_CONFIG_DEPTH = 20
MAX_CONFIG_VALUES = 200_000
MAX_DOCUMENT_INTEGER = int(sys.float_info.max)


class DocumentError(ValueError):
    """A JSON document no model configuration can be: the message says what is wrong and
    where; ``field`` is the top-level key it is under (None for the document itself)."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        where = f" (at '{'.'.join(path)}')" if path else ""
        super().__init__(message + where)
        self.path = path
        self.field = path[0] if path else None


def check_config_document(config: Any) -> None:
    """Raise ``DocumentError`` when ``config`` nests deeper than ``MAX_CONFIG_DEPTH``, holds
    more than ``MAX_CONFIG_VALUES`` values, an integer past any float or a NUL character. Walks the
    document once with an explicit stack (a recursive walk is what a deep document attacks)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(config, ())]
    seen = 0
    while stack:
        value, path = stack.pop()
        seen += 1
        if seen > MAX_CONFIG_VALUES:
            raise DocumentError(f"The config holds more than {MAX_CONFIG_VALUES:,} values.")
        if isinstance(value, Mapping | list | tuple):
            if len(path) >= MAX_CONFIG_DEPTH:
                raise DocumentError(
                    f"The config nests deeper than {MAX_CONFIG_DEPTH} levels; no model "
                    "configuration does.",
                    path[:1],
                )
            if isinstance(value, Mapping):
                for key, item in value.items():
                    if isinstance(key, str) and "\x00" in key:
                        raise DocumentError("The config holds a NUL character in a key.", path)
                    stack.append((item, (*path, str(key))))
            else:
                stack.extend((item, (*path, str(index))) for index, item in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise DocumentError("The config holds a NUL character in a text value.", path)
        elif isinstance(value, int) and abs(value) > MAX_DOCUMENT_INTEGER:
            raise DocumentError("The config holds an integer no number type can hold.", path)


def shown(value: float) -> str:
    """A number as a message quotes it: short even when it has hundreds of digits."""
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"{value:.3e}"
    return repr(value)


def check_config_integer(name: str, value: float) -> str | None:
    """Why an integer config field's value cannot be used, or None when it can: finite, whole,
    not negative, and within its field's maximum."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"Config field '{name}' must be a finite number, got {value!r}."
    if value < 0 or value != int(value):
        return f"Config field '{name}' must be a non-negative integer, got {shown(value)}."
    limit = CONFIG_FIELD_MAXIMA.get(name, MAX_CONFIG_INTEGER)
    if value > limit:
        return f"Config field '{name}' must be at most {limit:,}, got {shown(value)}."
    return None

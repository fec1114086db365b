"""The registry of family readers, keyed by ``model_type``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from calculator.estimator.architecture import Architecture, ConfigFields

Reader = Callable[[ConfigFields], Architecture]

READERS: dict[str, Reader] = {}


def register(*model_types: str) -> Callable[[Reader], Reader]:
    """Class the decorated reader as the one for these ``model_type`` values."""

    def decorate(reader: Reader) -> Reader:
        for model_type in model_types:
            if model_type in READERS:
                raise ValueError(f"model_type {model_type!r} registered twice")
            READERS[model_type] = reader
        return reader

    return decorate


def known_model_types() -> frozenset[str]:
    return frozenset(READERS)


def reader_for(config: Mapping[str, Any]) -> Reader:
    """The reader for a config: by its ``model_type``, else the generic (Llama-shaped) one."""
    model_type = str(config.get("model_type") or "")
    if model_type in READERS:
        return READERS[model_type]
    if isinstance(config.get("text_config"), Mapping):
        return READERS["__multimodal__"]
    return READERS["llama"]

"""One module per model family, as ``transformers`` keeps one ``modeling_<family>.py`` each.

A family module reads its ``config.json`` fields into an ``Architecture`` and registers its
reader for the ``model_type`` values it covers (``@register("gemma2", ...)``). Importing this
package imports every family module listed in ``FAMILY_MODULES``, which fills the registry.
"""

from __future__ import annotations

import importlib

from calculator.estimator.architecture import use_family_readers
from calculator.estimator.families.registry import (
    READERS,
    family_of,
    known_model_types,
    reader_for,
    register,
)

FAMILY_MODULES = (
    "afmoe",
    "arcee",
    "bigcode",
    "bloom",
    "cohere",
    "cwm",
    "dbrx",
    "deepseek",
    "deepseek_v4",
    "dots",
    "ernie",
    "exaone",
    "falcon",
    "gemma",
    "gemma4",
    "glm",
    "gpt2",
    "gpt_neox",
    "gpt_oss",
    "gptj",
    "granite",
    "helium",
    "hybrid",
    "jetmoe",
    "hunyuan",
    "kimi",
    "kimi_linear",
    "laguna",
    "llama",
    "llama4",
    "longcat",
    "mimo",
    "minicpm3",
    "minimax",
    "minimax_m3",
    "muse_glimmer",
    "mllama",
    "mistral",
    "mistral3",
    "nemotron",
    "olmo",
    "opt",
    "phi",
    "phi3",
    "phimoe",
    "qwen",
    "qwen_next",
    "qwen_vl",
    "seed_oss",
    "smollm",
    "ssm",
    "stablelm",
)

for _module in FAMILY_MODULES:
    importlib.import_module(f"{__name__}.{_module}")
use_family_readers(family_of, reader_for)

__all__ = ["FAMILY_MODULES", "READERS", "known_model_types", "reader_for", "register"]

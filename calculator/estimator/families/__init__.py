"""One module per model family, as ``transformers`` keeps one ``modeling_<family>.py`` each.

A family module reads its ``config.json`` fields into an ``Architecture`` and registers its
reader for the ``model_type`` values it covers (``@register("gemma2", ...)``). Importing this
package imports every family module, which fills the registry.
"""

from __future__ import annotations

from calculator.estimator.families import (  # noqa: F401  (imported to register their readers)
    deepseek,
    falcon,
    gemma,
    gpt2,
    gpt_neox,
    gpt_oss,
    llama,
    mistral,
    olmo,
    phi3,
    qwen,
)
from calculator.estimator.families.registry import READERS, known_model_types, reader_for, register

__all__ = ["READERS", "known_model_types", "reader_for", "register"]

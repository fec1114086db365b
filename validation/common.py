"""Shared helpers for the validation harness (config loading, fake-mode model construction).

Everything here runs real Hugging Face `transformers` modelling code on the CPU.  Models are
constructed either on the ``meta`` device (parameter counting) or as fake CPU tensors inside
``torch._subclasses.fake_tensor.FakeTensorMode`` (memory measurement), so no real memory is
allocated for weights, activations or optimizer states.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
CONFIG_DIR = HERE / "configs"

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

# Keys dropped from a published config before building the model.  ``quantization_config``
# (gpt-oss MXFP4, some DeepSeek FP8 checkpoints) would make transformers try to build quantized
# modules; we count / measure the unquantized architecture instead.
DROPPED_KEYS = ("quantization_config",)


def config_path(name: str) -> Path:
    p = Path(name)
    if p.suffix == ".json" and p.exists():
        return p
    return CONFIG_DIR / f"{name}.json"


def load_config_dict(name: str) -> tuple[dict[str, Any], list[str]]:
    """Return (config dict, notes) for a config name or path."""
    with open(config_path(name)) as fh:
        d = json.load(fh)
    notes = []
    for k in DROPPED_KEYS:
        if k in d:
            d.pop(k)
            notes.append(f"dropped '{k}' before building (unquantized architecture)")
    return d, notes


def build_config(name: str):
    """A transformers config object built from the published config.json dict."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    d, notes = load_config_dict(name)
    mt = d.get("model_type")
    if mt not in CONFIG_MAPPING:
        raise ValueError(f"model_type {mt!r} not known to this transformers version")
    cfg = CONFIG_MAPPING[mt].from_dict(d)
    return cfg, notes


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build_causal_lm(
    cfg, dtype: torch.dtype, attn_implementation: str | None = None, device: str = "cpu"
):
    """Construct AutoModelForCausalLM directly in ``dtype`` on ``device``.

    Must be called inside FakeTensorMode when device == "cpu" (the harness never allocates
    real weights).  We never call ``.to()`` / ``.to_empty()`` on fake parameters (that path
    fails under FakeTensorMode with "Cannot swap t1 because it has weakref associated with it").
    """
    from transformers import AutoModelForCausalLM

    kwargs = {}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    with default_dtype(dtype), torch.device(device):
        # ``dtype=`` keeps from_config from substituting the config's own torch_dtype field.
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kwargs)
    bad = {p.dtype for p in model.parameters()} - {dtype}
    if bad:
        raise RuntimeError(f"model built with parameter dtypes {bad}, expected {dtype}")
    return model


def versions() -> dict[str, str]:
    import platform

    import transformers

    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    try:
        import peft

        out["peft"] = peft.__version__
    except Exception:  # pragma: no cover
        pass
    return out


def rel(p: os.PathLike | str) -> str:
    try:
        return str(Path(p).resolve().relative_to(HERE.parent))
    except ValueError:
        return str(p)

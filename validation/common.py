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
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    d, notes = load_config_dict(name)
    mt = d.get("model_type")
    if mt not in CONFIG_MAPPING:
        # A model_type transformers does not register (Kimi K2's kimi_k2) whose `architectures`
        # names a class it does: build that class's config, as from_pretrained would.
        by_class: dict[str, str] = {}
        for key, cls in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items():
            by_class.setdefault(cls, key)  # the class's own model_type comes first
        known = [by_class[a] for a in d.get("architectures") or [] if a in by_class]
        if not known:
            raise ValueError(f"model_type {mt!r} not known to this transformers version")
        notes.append(f"model_type {mt!r} unknown to transformers; built as {known[0]!r}")
        mt = known[0]
        d = {**d, "model_type": mt}
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
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    kwargs = {}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    with default_dtype(dtype), torch.device(device):
        # ``dtype=`` keeps from_config from substituting the config's own torch_dtype field.
        # A vision-language config builds the whole model (vision tower included), as loading
        # the checkpoint for image-text-to-text does.
        vlm = cfg.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES and hasattr(
            cfg, "vision_config"
        )
        auto = AutoModelForImageTextToText if vlm else AutoModelForCausalLM
        try:
            model = auto.from_config(cfg, dtype=dtype, **kwargs)
        except ValueError as error:
            # Attention-free models (Mamba) refuse SDPA; they have no attention, so "eager" only
            # names the (unused) implementation.
            if "attention implementation" not in str(error) or not kwargs:
                raise
            model = auto.from_config(cfg, dtype=dtype, attn_implementation="eager")
    # transformers keeps some modules in fp32 whatever the dtype (`_keep_in_fp32_modules_strict`:
    # the MoE router `gate.weight` of DeepSeek-V2/V3 and GLM-4 MoE Lite), as loading does.
    strict = getattr(model, "_keep_in_fp32_modules_strict", None) or ()
    bad = {
        p.dtype
        for name, p in model.named_parameters()
        if not any(f".{m}" in f".{name}" for m in strict)
    } - {dtype}
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

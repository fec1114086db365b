"""The calculator form: parsing, bounds and translated messages; builds the estimator's request."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from calculator.estimator import ConfigError, EstimateRequest
from calculator.estimator.lora import ALL_LINEAR

MODE_CHOICES = [
    ("inference", _("Inference")),
    ("full_finetune", _("Full fine-tuning")),
    ("lora", _("LoRA")),
    ("qlora", _("QLoRA")),
    ("pretrain", _("Training from scratch")),
]
PRECISION_CHOICES = [
    ("bf16", _("BF16 (16-bit)")),
    ("fp16", _("FP16 (16-bit)")),
    ("fp32", _("FP32 (32-bit)")),
    ("fp8", _("FP8 (8-bit float)")),
    ("int8", _("INT8 (8-bit)")),
    ("int4", _("INT4 (4-bit)")),
    ("int2", _("INT2 (2-bit)")),
]
KV_CHOICES = [
    ("", _("Same as compute")),
    ("bf16", "BF16"),
    ("fp16", "FP16"),
    ("fp32", "FP32"),
    ("fp8", "FP8"),
    ("int8", "INT8"),
    ("int4", "INT4"),
]
OPTIMIZER_CHOICES = [
    ("adamw", _("AdamW")),
    ("adamw_8bit", _("8-bit AdamW")),
    ("sgd", _("SGD")),
    ("sgd_momentum", _("SGD with momentum")),
    ("adafactor", _("Adafactor")),
    ("lion", _("Lion")),
]
ATTENTION_CHOICES = [
    ("flash", _("FlashAttention / SDPA")),
    ("eager", _("Eager (materialises scores)")),
]
SOURCE_CHOICES = [
    ("preset", _("Catalogue model")),
    ("custom", _("Custom architecture")),
    ("config", _("Paste config.json")),
]
LORA_TARGET_CHOICES = [
    ("all-linear", _("All linear layers")),
    *[(name, name) for name in ALL_LINEAR],
]
ZERO_CHOICES = [
    ("0", _("None (plain data parallel)")),
    ("1", _("ZeRO-1: shard optimizer states")),
    ("2", _("ZeRO-2: + gradients")),
    ("3", _("ZeRO-3 / FSDP full shard: + weights")),
]

DEFAULT_MODEL = "Llama 3.1 8B"
MAX_CONFIG_CHARS = 200_000

# Permalink keys: short, readable, stable across deployments.
DEFAULTS: dict[str, Any] = {
    "source": "preset",
    "model": DEFAULT_MODEL,
    "mode": "inference",
    "precision": "bf16",
    "kv": "",
    "optimizer": "adamw",
    "batch": 1,
    "seq": 4096,
    "attn": "flash",
    "lora_rank": 16,
    "lora_targets": ["q_proj", "v_proj"],
    "gpus": 1,
    "zero": "0",
    "tp": 1,
    "gpu": "rtx-4090-24gb",
}
PERMALINK_KEYS = (
    "source", "model", "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "inter",
    "vocab", "experts", "active_experts", "mode", "precision", "mixed", "kv", "optimizer",
    "batch", "seq", "ckpt", "attn", "lora_rank", "lora_targets", "gpus", "zero", "tp", "gpu",
    "vram", "cfg", "images",
)  # fmt: skip


def _int(
    label: Any, lo: int, hi: int, help_text: Any = "", required: bool = True
) -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        min_value=lo,
        max_value=hi,
        required=required,
        help_text=help_text,
        error_messages={
            "required": _("Enter a whole number."),
            "invalid": _("Enter a whole number."),
            "min_value": _("Must be at least %(limit_value)s."),
            "max_value": _("Must be at most %(limit_value)s."),
        },
    )


def _float(label: Any, lo: float, hi: float) -> forms.FloatField:
    return forms.FloatField(
        label=label,
        min_value=lo,
        max_value=hi,
        required=False,
        error_messages={
            "invalid": _("Enter a number."),
            "min_value": _("Must be at least %(limit_value)s."),
            "max_value": _("Must be at most %(limit_value)s."),
        },
    )


class CalculatorForm(forms.Form):
    source = forms.ChoiceField(
        label=_("Model from"), choices=SOURCE_CHOICES, required=False, widget=forms.RadioSelect
    )
    model = forms.CharField(
        label=_("Model"),
        max_length=200,
        required=False,
        help_text=_(
            "Type a name as you know it: qwen2-7B, Llama 3.1 8B, meta-llama/Llama-3.1-8B-Instruct."
        ),
    )
    params = _float(_("Parameters (billions)"), 0.001, 100_000)
    layers = _int(_("Layers"), 1, 10_000, required=False)
    hidden = _int(_("Hidden size"), 1, 1_000_000, required=False)
    heads = _int(_("Attention heads"), 1, 10_000, required=False)
    kv_heads = _int(_("KV heads"), 1, 10_000, required=False)
    head_dim = _int(_("Head dimension"), 1, 100_000, required=False)
    inter = _int(_("Intermediate (MLP) size"), 1, 10_000_000, required=False)
    vocab = _int(_("Vocabulary size"), 1, 100_000_000, required=False)
    experts = _int(_("Experts (MoE)"), 0, 100_000, required=False)
    active_experts = _int(_("Active experts per token"), 0, 100_000, required=False)
    config = forms.CharField(
        label=_("config.json"),
        required=False,
        max_length=MAX_CONFIG_CHARS,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        error_messages={
            "max_length": _("The config is too long (at most %(limit_value)s characters).")
        },
    )
    mode = forms.ChoiceField(label=_("Mode"), choices=MODE_CHOICES)
    precision = forms.ChoiceField(label=_("Precision"), choices=PRECISION_CHOICES)
    mixed = forms.BooleanField(label=_("Mixed precision (fp32 master weights)"), required=False)
    kv = forms.ChoiceField(label=_("KV-cache precision"), choices=KV_CHOICES, required=False)
    optimizer = forms.ChoiceField(label=_("Optimizer"), choices=OPTIMIZER_CHOICES)
    batch = _int(_("Batch size"), 1, 1_000_000)
    seq = _int(_("Sequence length (tokens)"), 1, 10_000_000)
    ckpt = forms.BooleanField(label=_("Gradient checkpointing"), required=False)
    attn = forms.ChoiceField(label=_("Attention kernel"), choices=ATTENTION_CHOICES)
    images = _int(_("Images per request"), 0, 1_000, required=False)
    lora_rank = _int(_("LoRA rank"), 1, 65_536)
    lora_targets = forms.MultipleChoiceField(
        label=_("LoRA target modules"),
        choices=LORA_TARGET_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    gpus = _int(_("Number of GPUs"), 1, 65_536)
    zero = forms.ChoiceField(label=_("ZeRO / FSDP stage"), choices=ZERO_CHOICES)
    tp = _int(_("Tensor parallel"), 1, 65_536)
    gpu = forms.CharField(label=_("GPU"), max_length=100, required=False)
    vram = _float(_("…or my card's memory (GB)"), 1, 100_000)

    HELP: dict[str, Any] = {
        "mode": _(
            "Inference only reads the weights; fine-tuning and training also keep gradients, optimizer states and activations for backward."
        ),
        "precision": _(
            "Bytes per weight: 4 at FP32, 2 at BF16/FP16, 1 at INT8/FP8, ½ at INT4. Quantized weights carry small per-group scales."
        ),
        "mixed": _(
            "Keeps fp32 weights, gradients and optimizer states and computes in BF16/FP16 (what Trainer(bf16=True) does): more memory than pure BF16, more stable."
        ),
        "kv": _(
            "The KV cache stores keys and values of every token so generation does not recompute them; 8-bit or 4-bit halves or quarters it."
        ),
        "optimizer": _(
            "AdamW keeps two numbers per trained parameter, 8-bit AdamW two bytes, SGD none (one with momentum)."
        ),
        "batch": _(
            "Sequences processed at once on each GPU; activations and KV cache grow linearly with it."
        ),
        "seq": _(
            "Tokens per sequence (prompt plus generated). KV cache and activations grow linearly; eager attention quadratically."
        ),
        "ckpt": _(
            "Keeps only each layer's input and recomputes the rest in backward: far fewer activations for about a third more compute."
        ),
        "attn": _(
            "FlashAttention and PyTorch SDPA never store the full attention matrix; the eager implementation does (sequence² per head)."
        ),
        "lora_rank": _(
            "Size of the low-rank adapters; the trained parameters grow linearly with it but stay a small fraction of the model."
        ),
        "lora_targets": _(
            "Linear layers that get adapters. More targets: more trained parameters and more saved activations."
        ),
        "gpus": _("GPUs working together; the result is per GPU."),
        "zero": _(
            "ZeRO/FSDP split optimizer states, gradients and finally the weights across data-parallel GPUs."
        ),
        "tp": _(
            "Splits every weight matrix and attention head across GPUs; must divide the number of GPUs."
        ),
        "gpu": _(
            "The card to check the result against: its usable memory, not the marketed figure."
        ),
        "images": _(
            "Vision-language models only: images in each sequence; each adds the model's image tokens (counted for a 1024 × 1024 image). Default 1."
        ),
        "vram": _(
            # xgettext:no-python-format
            "Any card not in the list: its memory as marketed. Counts 98.5% of it as usable, as the driver reports for most cards."
        ),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, text in self.HELP.items():
            self.fields[name].help_text = text

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        source = cleaned.get("source") or "preset"
        cleaned["source"] = source
        if source == "preset" and not (cleaned.get("model") or "").strip():
            self.add_error("model", _("Type a model name, or choose a custom architecture."))
        if (
            source == "custom"
            and not cleaned.get("params")
            and not (cleaned.get("layers") and cleaned.get("hidden"))
        ):
            self.add_error(
                "params", _("Give the parameter count, or at least layers and hidden size.")
            )
        if source == "config":
            text = (cleaned.get("config") or "").strip()
            if not text and self.data.get("cfg"):
                self.add_error(
                    "config",
                    _(
                        "This link's pasted config is no longer stored on the server; paste the config.json again."
                    ),
                )
            elif not text:
                self.add_error("config", _("Paste the model's config.json."))
            else:
                try:
                    parsed = json.loads(text)
                except (ValueError, RecursionError):
                    self.add_error("config", _("This is not valid JSON."))
                else:
                    if not isinstance(parsed, dict):
                        self.add_error("config", _("A config.json is a JSON object ({…})."))
                    else:
                        cleaned["config_dict"] = parsed
        gpus, tp = cleaned.get("gpus"), cleaned.get("tp")
        if gpus and tp and gpus % tp:
            self.add_error("tp", _("Tensor parallel must divide the number of GPUs."))
        mode = cleaned.get("mode")
        precision = cleaned.get("precision")
        if mode in {"full_finetune", "pretrain"} and precision not in {"fp32", "fp16", "bf16"}:
            self.add_error(
                "precision",
                _(
                    "Full fine-tuning and training need FP32, FP16 or BF16 weights; use LoRA or QLoRA for quantized models."
                ),
            )
        if (
            cleaned.get("mixed")
            and precision not in {"fp16", "bf16"}
            and mode not in {"inference", "lora", "qlora"}
        ):
            self.add_error(
                "mixed", _("Mixed precision computes in BF16 or FP16: choose one of them.")
            )
        return cleaned

    def estimate_request(self, model: dict[str, Any] | BaseModel) -> EstimateRequest:
        """The estimator's request for the cleaned form and a resolved model description."""
        c = self.cleaned_data
        mode = c["mode"]
        training = mode != "inference"
        targets = c.get("lora_targets") or ["q_proj", "v_proj"]
        payload = {
            "model": model,
            "mode": mode,
            "precision": c["precision"],
            "mixed_precision": bool(c.get("mixed")) and mode in {"full_finetune", "pretrain"},
            "optimizer": c["optimizer"],
            "batch_size": c["batch"],
            "seq_len": c["seq"],
            "gradient_checkpointing": bool(c.get("ckpt")) and training,
            "attention": c["attn"],
            "kv_cache_precision": (c.get("kv") or None) if not training else None,
            "lora": {
                "rank": c["lora_rank"],
                "targets": "all-linear" if "all-linear" in targets else targets,
            },
            "num_gpus": c["gpus"],
            "zero_stage": int(c["zero"]) if training else 0,
            "tensor_parallel": c["tp"],
            "images_per_request": c.get("images"),
        }
        return EstimateRequest.model_validate(payload)


def custom_model_payload(cleaned: dict[str, Any]) -> dict[str, Any]:
    mapping = {
        "params": "params_billion",
        "layers": "num_layers",
        "hidden": "hidden_size",
        "heads": "num_attention_heads",
        "kv_heads": "num_kv_heads",
        "head_dim": "head_dim",
        "inter": "intermediate_size",
        "vocab": "vocab_size",
        "experts": "num_experts",
        "active_experts": "experts_per_token",
    }
    return {target: cleaned[key] for key, target in mapping.items() if cleaned.get(key)}


FIELD_FOR_ERROR = {
    "params_billion": "params",
    "num_layers": "layers",
    "hidden_size": "hidden",
    "num_attention_heads": "heads",
    "num_kv_heads": "kv_heads",
    "head_dim": "head_dim",
    "intermediate_size": "inter",
    "vocab_size": "vocab",
    "num_experts": "experts",
    "experts_per_token": "active_experts",
    "tensor_parallel": "tp",
    "batch_size": "batch",
    "seq_len": "seq",
}


def attach_estimator_error(form: CalculatorForm, error: Exception) -> None:
    """Show an estimator or config error next to the field it concerns."""
    if isinstance(error, ConfigError):
        source = form.cleaned_data.get("source")
        form.add_error(
            "config" if source == "config" else ("model" if source == "preset" else "params"),
            _("The model's configuration cannot be used: %(reason)s") % {"reason": str(error)},
        )
        return
    if isinstance(error, PydanticValidationError):
        for item in error.errors():
            location = [str(part) for part in item["loc"]]
            field = next((FIELD_FOR_ERROR[p] for p in location if p in FIELD_FOR_ERROR), None)
            message = str(item["msg"]).removeprefix("Value error, ")
            if field is None:
                field = "layers" if "model" in location else None
            form.add_error(field, message)
        return
    form.add_error(None, str(error))


FITS_MODE_CHOICES = [
    ("inference", _("Inference")),
    ("lora", _("LoRA")),
    ("qlora", _("QLoRA")),
    ("full_finetune", _("Full fine-tuning")),
]


class FitsForm(forms.Form):
    """The 'what fits in my VRAM' page: a workload, and optionally your own GPU."""

    mode = forms.ChoiceField(label=_("Mode"), choices=FITS_MODE_CHOICES, initial="inference")
    seq = _int(_("Context length (tokens)"), 1, 1_048_576)
    batch = _int(_("Batch size"), 1, 4096)
    gpu = forms.CharField(label=_("Your GPU"), max_length=100, required=False)
    gb = _float(_("…or its memory (GB)"), 1, 100_000)
    count = _int(_("Number of GPUs"), 1, 1024)

    DEFAULTS: dict[str, Any] = {"mode": "inference", "seq": 4096, "batch": 1, "count": 1}

"""The calculator form: parsing, bounds and translated messages; builds the estimator's request."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.formats import number_format
from django.utils.html import format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from calculator.estimator import ConfigError
from calculator.estimator.bounds import MAX_SEQ_LEN
from calculator.estimator.lora import ALL_LINEAR
from calculator.estimator.runtimes.llama_cpp import (
    GGUF_TYPES,
    LM_STUDIO_DEFAULTS,
    OLLAMA_DEFAULTS,
    LlamaCppOptions,
    OverrideError,
    parse_override_tensors,
)

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
    ("paged_adamw", _("Paged AdamW (bitsandbytes)")),
    ("paged_adamw_8bit", _("Paged 8-bit AdamW (bitsandbytes)")),
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

STACK_CHOICES = [
    ("hf_trainer", _("Hugging Face Trainer (also TRL, Axolotl, LLaMA-Factory)")),
    ("hf_trainer_liger", _("Hugging Face Trainer + Liger kernels")),
    ("unsloth", _("Unsloth")),
    ("torchtune", _("torchtune")),
    ("litgpt", _("LitGPT")),
    ("deepspeed", _("DeepSpeed")),
    ("fsdp2", _("PyTorch FSDP2")),
    ("megatron", _("Megatron-LM (pretraining)")),
]
STACK_DEFAULT = [("", _("The stack's default"))]
OPTIMIZER_IMPL_CHOICES = [
    *STACK_DEFAULT,
    ("fused", _("fused (one kernel, no temporaries)")),
    ("foreach", _("foreach (multi-tensor)")),
    ("for_loop", _("for-loop (one tensor at a time)")),
]
LOSS_CHOICES = [
    *STACK_DEFAULT,
    ("full", _("full logits in FP32")),
    ("chunked", _("chunked cross-entropy")),
    ("fused_linear", _("fused linear cross-entropy (no logits)")),
]
CHECKPOINTING_CHOICES = [
    *STACK_DEFAULT,
    ("none", _("none")),
    ("full", _("full (each layer's input)")),
    ("selective", _("selective (attention recomputed)")),
]
TRI_STATE_CHOICES = [*STACK_DEFAULT, ("on", _("on")), ("off", _("off"))]

RUNTIME_CHOICES = [
    ("transformers", _("Hugging Face transformers")),
    ("llama_cpp", _("llama.cpp / Ollama / LM Studio (GGUF)")),
    ("vllm", _("vLLM (serving)")),
]
# The GGUF file types the issue asks for, most precise first (llama.cpp's own names).
GGUF_CHOICES = [
    ("", _("The model's usual file (MXFP4 for gpt-oss, else Q4_K_M)")),
    *((name, name) for name in GGUF_TYPES),
]
CACHE_TYPE_CHOICES = [(name, name) for name in ("f16", "bf16", "f32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")]  # fmt: skip
ON_OFF_CHOICES = [("on", _("on")), ("off", _("off"))]
VLLM_QUANT_CHOICES = [
    ("", _("As the checkpoint says")),
    ("none", _("None (BF16/FP16)")),
    ("fp8", "FP8"),
    ("int8", _("INT8 (W8A8)")),
    ("awq", "AWQ"),
    ("gptq", "GPTQ"),
    ("bitsandbytes", _("bitsandbytes (4-bit)")),
    ("mxfp4", "MXFP4"),
]
VLLM_KV_CHOICES = [("auto", _("auto (model dtype)")), ("fp8", "FP8"), ("fp8_e5m2", "FP8 E5M2")]
# llama-server's defaults (common/common.h); what "llama.cpp defaults" restores.
LLAMA_SERVER = LlamaCppOptions()


def _llama_cpp_query(options: LlamaCppOptions) -> dict[str, str]:
    """The page's fields for a set of llama.cpp options (-np slots of -c / -np tokens)."""
    return {
        "runtime": "llama_cpp",
        "batch": str(options.n_parallel),
        "seq": str(max(options.n_ctx // options.n_parallel, 1)),
        "fa": "on" if options.flash_attention else "off",
        "swa": "on" if options.swa_full else "off",
        "kvu": "on" if options.kv_unified else "off",
        "nbatch": str(options.n_batch),
        "ubatch": str(options.n_ubatch),
        "ctk": options.cache_type_k,
        "ctv": options.cache_type_v,
        "ngl": "",
    }


# One-click defaults of the programs that embed llama.cpp.
RUNTIME_PRESETS = [
    ("llama-server", _llama_cpp_query(LLAMA_SERVER)),
    ("Ollama", _llama_cpp_query(OLLAMA_DEFAULTS)),
    ("LM Studio", _llama_cpp_query(LM_STUDIO_DEFAULTS)),
]

DEFAULT_MODEL = "Llama 3.1 8B"
MAX_CONFIG_CHARS = 200_000


def config_too_long_message() -> str:
    """Why a pasted config longer than ``MAX_CONFIG_CHARS`` is refused, in the active language."""
    return _("The config is too long (at most %(limit_value)s characters).") % {
        "limit_value": number_format(MAX_CONFIG_CHARS, force_grouping=True)
    }


def validate_config_length(text: str) -> None:
    if len(text) > MAX_CONFIG_CHARS:
        raise ValidationError(config_too_long_message(), code="max_length")


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
    "runtime": "transformers",
    "gguf": LLAMA_SERVER.gguf_type or "",
    "ctk": LLAMA_SERVER.cache_type_k,
    "ctv": LLAMA_SERVER.cache_type_v,
    "fa": "on" if LLAMA_SERVER.flash_attention else "off",
    "swa": "on" if LLAMA_SERVER.swa_full else "off",
    "kvu": "on" if LLAMA_SERVER.kv_unified else "off",
    "cmoe": "on" if LLAMA_SERVER.cpu_moe else "off",
    "ubatch": LLAMA_SERVER.n_ubatch,
    "nbatch": LLAMA_SERVER.n_batch,
    "util": 0.9,
    "vkv": "auto",
    "block": 16,
}
PERMALINK_KEYS = (
    "source", "model", "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "inter",
    "vocab", "experts", "active_experts", "mode", "precision", "mixed", "kv", "optimizer",
    "batch", "seq", "ckpt", "attn", "lora_rank", "lora_targets", "gpus", "zero", "tp", "gpu",
    "vram", "cfg", "images", "runtime", "gguf", "ctk", "ctv", "fa", "swa", "kvu", "ncmoe", "cmoe", "ot", "ngl", "ts", "ubatch", "nbatch",
    "util", "max_seqs", "batched", "quant", "vkv", "eager", "block", "prompt", "train_b",
    "price", "ram_bw", "stack", "opt_impl", "loss", "act_ckpt", "act_offload", "opt_offload",
    "param_offload", "seq_par", "pp", "cp", "micro", "ram",
)  # fmt: skip
# The training stack's switches (empty: the stack's default).
STACK_FIELDS = ("opt_impl", "loss", "act_ckpt", "act_offload", "opt_offload", "param_offload", "seq_par", "pp", "cp", "micro")  # fmt: skip
# Fields that only one runtime reads (the page shows them when that runtime is chosen).
LLAMA_CPP_FIELDS = ("gguf", "ctk", "ctv", "fa", "swa", "kvu", "ncmoe", "cmoe", "ot", "ngl", "ts", "ubatch", "nbatch")  # fmt: skip
VLLM_FIELDS = ("util", "max_seqs", "batched", "quant", "vkv", "eager", "block")


@dataclass(frozen=True)
class Applies:
    """Where a form field applies: the modes, and the runtimes, that read it (``None``: all;
    training always runs transformers). Elsewhere the page hides its wrapper (app.css) and
    disables its inputs (app.js), so the browser leaves it out of the request, and links built
    on the server leave its key out unless ``in_links``."""

    modes: tuple[str, ...] | None = None
    runtimes: tuple[str, ...] | None = None
    in_links: bool = False

    def to(self, mode: str, runtime: str) -> bool:
        runtime = runtime if mode == "inference" else "transformers"
        return (self.modes is None or mode in self.modes) and (
            self.runtimes is None or runtime in self.runtimes
        )

    @property
    def attrs(self) -> SafeString:
        """The data attributes of the field's wrapper on the page."""
        return format_html_join(
            " ",
            '{}="{}"',
            (
                (name, " ".join(values))
                for name, values in (("data-modes", self.modes), ("data-runtimes", self.runtimes))
                if values is not None
            ),
        )


_INFERENCE = ("inference",)
_TRAINING = tuple(mode for mode, _label in MODE_CHOICES if mode != "inference")
_HF = ("transformers",)
# Fields that only some modes or runtimes read; the others apply everywhere. ``in_links``: keys
# that links built on the server have always kept where the field does not apply.
FIELD_APPLIES: dict[str, Applies] = {
    "runtime": Applies(_INFERENCE),
    "prompt": Applies(_INFERENCE),
    **dict.fromkeys(LLAMA_CPP_FIELDS, Applies(_INFERENCE, ("llama_cpp",))),
    "ram_bw": Applies(_INFERENCE, ("llama_cpp",), in_links=True),
    **dict.fromkeys(VLLM_FIELDS, Applies(_INFERENCE, ("vllm",))),
    **dict.fromkeys(("precision", "attn", "images"), Applies(None, _HF, in_links=True)),
    "kv": Applies(_INFERENCE, _HF, in_links=True),
    **dict.fromkeys(("stack", "train_b", "price", *STACK_FIELDS), Applies(_TRAINING)),
    **dict.fromkeys(("optimizer", "ckpt", "zero"), Applies(_TRAINING, in_links=True)),
    "mixed": Applies(("full_finetune", "pretrain"), in_links=True),
    **dict.fromkeys(("lora_rank", "lora_targets"), Applies(("lora", "qlora"), in_links=True)),
}


# The GPU choice for a machine without one: llama.cpp on the CPU.
NO_GPU = "cpu"


def check_runtime(form: forms.Form, cleaned: dict[str, Any]) -> None:
    """The runtime rules of the calculator and the fits page (same messages): llama.cpp and
    vLLM serve models; llama.cpp splits layers over several GPUs and has no tensor
    parallelism. Sets the default runtime."""
    runtime = cleaned["runtime"] = cleaned.get("runtime") or "transformers"
    if runtime != "transformers" and cleaned.get("mode") not in (None, "inference"):
        form.add_error(
            "runtime",
            _(
                "llama.cpp and vLLM serve models (inference); choose Hugging Face transformers for training."
            ),
        )
    if runtime != "llama_cpp":
        return
    if (cleaned.get("tp") or 1) > 1:
        form.add_error(
            "tp",
            _(
                "llama.cpp splits the layers over the GPUs rather than each layer; set tensor parallel to 1."
            ),
        )


def clean_llama_placement(form: forms.Form, cleaned: dict[str, Any]) -> None:
    """Reads -ot (``ot_entries``) and -ts (``ts_shares``), with a message on the field that
    says what is wrong with the entry."""
    text = cleaned.get("ot") or ""
    if text:
        try:
            cleaned["ot_entries"] = parse_override_tensors(text)
        except OverrideError as error:
            messages = {
                "syntax": _(
                    "“%(entry)s” is not PATTERN=CPU; write entries as -ot takes them, separated by commas (for example exps=CPU)."
                ),
                "buffer": _(
                    "“%(entry)s”: only =CPU is modelled (tensors kept in system RAM), not another device."
                ),
                "regex": _("“%(entry)s” is not a regular expression llama.cpp can read."),
                "nested": _(
                    "“%(entry)s” repeats a group that itself repeats, which can take a regex engine very long; write it without the nested repetition."
                ),
            }
            form.add_error("ot", messages[error.kind] % {"entry": error.entry[:80]})
    split = (cleaned.get("ts") or "").replace(" ", "")
    if split:
        try:
            shares = [float(part) for part in split.replace("/", ",").split(",") if part]
        except ValueError:
            shares = []
        gpus = cleaned.get("gpus") or 1
        if not shares or any(not (0 <= share <= 1e6) for share in shares) or not any(shares):
            form.add_error(
                "ts", _("Write one share per GPU, separated by commas, for example 3,1.")
            )
        elif len(shares) != gpus:
            form.add_error(
                "ts",
                _("Give one share per GPU: %(n)s GPUs, %(m)s shares.")
                % {"n": gpus, "m": len(shares)},
            )
        else:
            cleaned["ts_shares"] = shares


# The custom architecture's fields: read only when the model comes from them.
CUSTOM_FIELDS = (
    "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "inter", "vocab", "experts",
    "active_experts",
)  # fmt: skip


def unused_runtime_keys(query: Any) -> frozenset[str]:
    """Permalink keys the chosen mode and runtime do not read (left out of links to keep them
    short), as ``FIELD_APPLIES`` says."""
    return _unused_keys(
        str(query.get("mode", "inference")), str(query.get("runtime") or "transformers")
    )


@lru_cache(maxsize=64)  # a handful of modes × runtimes; asked on every recompute
def _unused_keys(mode: str, runtime: str) -> frozenset[str]:
    return frozenset(
        key
        for key, applies in FIELD_APPLIES.items()
        if not applies.in_links and not applies.to(mode, runtime)
    )


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
    # No max_length: its maxlength attribute made the browser cut a longer paste silently,
    # which then failed as "not valid JSON"; the validator says it is too long instead.
    config = forms.CharField(
        label=_("config.json"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        validators=[validate_config_length],
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
    runtime = forms.ChoiceField(label=_("Runtime"), choices=RUNTIME_CHOICES, required=False)
    gguf = forms.ChoiceField(label=_("GGUF file type"), choices=GGUF_CHOICES, required=False)
    ctk = forms.ChoiceField(label=_("K cache type"), choices=CACHE_TYPE_CHOICES, required=False)
    ctv = forms.ChoiceField(label=_("V cache type"), choices=CACHE_TYPE_CHOICES, required=False)
    fa = forms.ChoiceField(label=_("Flash attention"), choices=ON_OFF_CHOICES, required=False)
    swa = forms.ChoiceField(
        label=_("Full-size sliding-window cache (--swa-full)"),
        choices=ON_OFF_CHOICES,
        required=False,
    )
    kvu = forms.ChoiceField(
        label=_("Unified KV cache (-kvu)"), choices=ON_OFF_CHOICES, required=False
    )
    ncmoe = _int(_("Layers with experts in RAM (--n-cpu-moe)"), 0, 100_000, required=False)
    cmoe = forms.ChoiceField(
        label=_("All experts in RAM (--cpu-moe)"), choices=ON_OFF_CHOICES, required=False
    )
    ot = forms.CharField(
        label=_("Tensors kept in RAM (-ot)"), max_length=4000, required=False, strip=True
    )
    ngl = _int(_("GPU layers (-ngl)"), 0, 10_000, required=False)
    ts = forms.CharField(label=_("Tensor split (-ts)"), max_length=200, required=False)
    ubatch = _int(_("Micro-batch (-ub)"), 1, 1_000_000, required=False)
    nbatch = _int(_("Logical batch (-b)"), 1, 1_000_000, required=False)
    util = forms.FloatField(
        label=_("GPU memory utilization"),
        min_value=0.05,
        max_value=1.0,
        required=False,
        error_messages={
            "invalid": _("Enter a number."),
            "min_value": _("Must be at least %(limit_value)s."),
            "max_value": _("Must be at most %(limit_value)s."),
        },
    )
    max_seqs = _int(_("Max concurrent sequences"), 1, 100_000, required=False)
    batched = _int(_("Max batched tokens"), 1, 10_000_000, required=False)
    quant = forms.ChoiceField(label=_("Quantization"), choices=VLLM_QUANT_CHOICES, required=False)
    vkv = forms.ChoiceField(label=_("KV-cache dtype"), choices=VLLM_KV_CHOICES, required=False)
    eager = forms.BooleanField(label=_("Eager mode (no CUDA graphs)"), required=False)
    block = _int(_("Block size (tokens)"), 1, 1024, required=False)
    prompt = _int(_("Prompt length (tokens)"), 1, 10_000_000, required=False)
    train_b = _float(_("Tokens to train on (billions)"), 0.000001, 1_000_000)
    price = _float(_("Price per GPU-hour"), 0, 10_000)
    ram_bw = _float(_("System RAM bandwidth (GB/s)"), 1, 10_000)
    stack = forms.ChoiceField(label=_("Training stack"), choices=STACK_CHOICES, required=False)
    opt_impl = forms.ChoiceField(
        label=_("Optimizer implementation"), choices=OPTIMIZER_IMPL_CHOICES, required=False
    )
    loss = forms.ChoiceField(label=_("Loss"), choices=LOSS_CHOICES, required=False)
    act_ckpt = forms.ChoiceField(
        label=_("Activation checkpointing"), choices=CHECKPOINTING_CHOICES, required=False
    )
    act_offload = forms.ChoiceField(
        label=_("Activation offloading to CPU RAM"), choices=TRI_STATE_CHOICES, required=False
    )
    opt_offload = forms.ChoiceField(
        label=_("Optimizer offload to CPU RAM"), choices=TRI_STATE_CHOICES, required=False
    )
    param_offload = forms.ChoiceField(
        label=_("Parameter offload to CPU RAM"), choices=TRI_STATE_CHOICES, required=False
    )
    seq_par = forms.ChoiceField(
        label=_("Sequence parallelism"), choices=TRI_STATE_CHOICES, required=False
    )
    pp = _int(_("Pipeline parallel"), 1, 65_536, required=False)
    cp = _int(_("Context parallel"), 1, 65_536, required=False)
    micro = _int(_("Micro-batches per step"), 1, 1_000_000, required=False)
    ram = _float(_("My system RAM (GB)"), 1, 1_000_000)

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
        "runtime": _(
            "What runs the model. Each allocates memory its own way: transformers for one request; llama.cpp preallocates the whole context and can leave layers on the CPU; vLLM takes a share of the card and fills it with KV cache."
        ),
        "gguf": _(
            "The quantization of the GGUF file you download (the name in the file, e.g. Q4_K_M). _M/_S/_L mixes keep some tensors at higher precision."
        ),
        "ctk": _("-ctk: the type of the K cache; q8_0 halves it, q4_0 quarters it."),
        "ctv": _("-ctv: the type of the V cache; a quantized V cache needs flash attention."),
        "fa": _(
            "-fa: flash attention avoids the attention-score buffer, whose size grows with the context."
        ),
        "swa": _(
            "--swa-full: give sliding-window layers a cache as long as the context instead of their window, as some prompt-cache reuse needs; off by default."
        ),
        "kvu": _(
            "-kvu: one KV cache shared by all slots instead of one per slot. llama-server turns it on by itself only when -np is left at auto; it changes how big the sliding-window cache is."
        ),
        "ncmoe": _(
            "--n-cpu-moe: keep the routed experts of the first N layers in system RAM and the rest of those layers on the GPU. The way to run a large mixture-of-experts model on a small card; decoding then reads those experts at RAM speed."
        ),
        "cmoe": _(
            "--cpu-moe: keep every routed expert in system RAM; attention, shared experts and the KV cache stay on the GPU."
        ),
        "ot": _(
            "-ot PATTERN=CPU: the tensors whose names match the regular expression stay in system RAM, as llama.cpp's --override-tensor; entries separated by commas. exps=CPU keeps every routed expert there (as --cpu-moe), blk\\.(2[0-9])\\.ffn_.*=CPU the feed-forward tensors of layers 20 to 29."
        ),
        "ts": _(
            "-ts: each GPU's share of the layers, separated by commas (3,1 puts three quarters on the first GPU); empty splits them by each GPU's free memory, as llama.cpp does."
        ),
        "ngl": _(
            "-ngl: how many layers go to the GPU (the output layer counts as one); empty means all. The rest stays in system RAM and runs on the CPU."
        ),
        "ubatch": _(
            "-ub: tokens per physical batch; the compute buffer grows with it. Default 512."
        ),
        "nbatch": _("-b: tokens per logical batch. Default 2048."),
        "util": _(
            "--gpu-memory-utilization: the share of the card vLLM takes at start; what the weights leave becomes KV cache. Default 0.9."
        ),
        "max_seqs": _(
            "--max-num-seqs: requests served at once; empty is vLLM's default (256, or 1024 on cards with 70 GB or more)."
        ),
        "batched": _(
            "--max-num-batched-tokens: tokens per scheduler step, which sizes the start-up profiling run; empty is vLLM's default."
        ),
        "quant": _(
            "--quantization: how the checkpoint's weights are stored; empty reads the checkpoint's quantization_config."
        ),
        "vkv": _("--kv-cache-dtype: FP8 halves the KV cache and doubles the tokens it holds."),
        "eager": _(
            "--enforce-eager: no CUDA graphs, which saves their memory (about 0.5 GiB) at some speed."
        ),
        "block": _("--block-size: tokens per KV-cache block. Default 16."),
        "stack": _(
            "The framework that runs the training: each keeps memory its own way (optimizer kernel, loss, checkpointing, offload). Its defaults fill the switches below, which you can change."
        ),
        "opt_impl": _(
            "fused (Hugging Face Trainer's default since PyTorch 2.8) needs no extra memory in the step; foreach holds one more copy of the optimizer state while it runs."
        ),
        "loss": _(
            "Full logits for every token in FP32 can take gigabytes with large vocabularies; chunked and fused losses never hold them all."
        ),
        "act_ckpt": _(
            "Full keeps only each layer's input and recomputes the rest; selective recomputes only attention (Korthikanti et al. 2022)."
        ),
        "act_offload": _("Moves the checkpointed layer inputs to CPU RAM during the step."),
        "opt_offload": _(
            "Keeps optimizer states (and FP32 master weights) in CPU RAM and runs the step on the CPU (ZeRO-Offload, FSDP CPU offload)."
        ),
        "param_offload": _(
            "Keeps the weights in CPU RAM and fetches them layer by layer (ZeRO-3 / FSDP offload)."
        ),
        "seq_par": _(
            "Megatron sequence parallelism: norms, dropout and the residual stream are split across the tensor-parallel GPUs."
        ),
        "pp": _(
            "Pipeline stages (1F1B schedule): each GPU holds some layers; the first stage keeps the most micro-batches in flight."
        ),
        "cp": _("Context parallelism: each GPU holds the sequence length ÷ this many tokens."),
        "micro": _(
            "With pipeline parallelism: micro-batches per step (default: the number of stages)."
        ),
        "ram": _(
            "For offloading and llama.cpp: the CPU RAM of the machine, checked against what is kept there."
        ),
        "prompt": _(
            "For the time to first token: the prompt read before the first generated token. Empty: the sequence length."
        ),
        "train_b": _("For the time (and cost) to train: the tokens of the whole run, in billions."),
        "price": _("What one GPU costs per hour, in any currency: the cost is in the same one."),
        "ram_bw": _(
            "llama.cpp layers left on the CPU run at this speed. Empty: 89.6 GB/s, two channels of DDR5-5600."
        ),
        "vram": _(
            # xgettext:no-python-format
            "Any card not in the list: its memory as marketed. Counts 98.5% of it as usable, as the driver reports for most cards."
        ),
    }

    def unread_fields(self) -> frozenset[str]:
        """Fields the submitted mode, runtime and model source do not read: those links leave
        out (``FIELD_APPLIES``), the custom architecture unless the model comes from it, and the
        pasted config unless it is the source. The runtime is always read: a serving runtime
        asked for with a training mode gets a message (``check_runtime``), not a silent default."""
        source = self.data.get("source") or "preset"
        unread = unused_runtime_keys(self.data) - {"runtime"}
        if source != "custom":
            unread |= frozenset(CUSTOM_FIELDS)
        if source != "config":
            unread |= {"config"}
        return unread

    def _clean_fields(self) -> None:
        # Only the fields this request reads are cleaned (issue 16: a recompute cleaned all ~60
        # for every keystroke). The others are left out of ``cleaned_data``, as a link leaves
        # them out, and a value the page hides cannot fail the form. Each field is cleaned
        # straight from the data, as Django does for a form like this one (no prefix, no
        # disabled or file fields, no clean_<field> methods: tests/calculator/test_forms.py),
        # without building a BoundField per field, which was half of the form's time.
        unread = self.unread_fields()
        for name, field in self.fields.items():
            if name in unread:
                continue
            try:
                value = field.widget.value_from_datadict(self.data, self.files, name)
                self.cleaned_data[name] = field.clean(value)
            except ValidationError as error:
                self.add_error(name, error)

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
        if source == "config" and "config" not in self.errors:  # e.g. too long: that says it
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
        check_runtime(self, cleaned)
        if cleaned.get("runtime") == "llama_cpp":
            clean_llama_placement(self, cleaned)
        if cleaned.get("gpu") == NO_GPU and cleaned.get("runtime") != "llama_cpp":
            self.add_error(
                "runtime",  # the GPU select has no message slot; the runtime is the fix
                _(
                    "Without a GPU the estimate is for llama.cpp, which runs on the CPU: choose it as the runtime, or choose a GPU."
                ),
            )
        gpus, tp = cleaned.get("gpus"), cleaned.get("tp")
        if gpus and tp and gpus % tp:
            self.add_error("tp", _("Tensor parallel must divide the number of GPUs."))
        elif gpus and tp and cleaned.get("mode") not in (None, "inference"):
            if cleaned.get("seq") and cleaned["seq"] % (cleaned.get("cp") or 1):
                self.add_error(
                    "cp", _("Context parallel must divide the sequence length into equal parts.")
                )
            model_parallel = tp * (cleaned.get("pp") or 1) * (cleaned.get("cp") or 1)
            if gpus % model_parallel:
                self.add_error(
                    "pp",
                    _(
                        "The number of GPUs must be a multiple of tensor × pipeline × context parallel (%(n)s)."
                    )
                    % {"n": model_parallel},
                )
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

    def estimate_fields(self, model: dict[str, Any] | BaseModel) -> dict[str, Any]:
        """The estimator's request fields for the cleaned form and a resolved model description
        (vLLM's GPU memory comes from the chosen card: ``calculation.request_on_card``)."""
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
            "runtime": c.get("runtime") or "transformers",
            "prompt_tokens": c.get("prompt"),
            "train_tokens": c["train_b"] * 1e9 if c.get("train_b") and training else None,
            "price_per_gpu_hour": c.get("price"),
            "host_memory_bandwidth_gb_s": c.get("ram_bw"),
            **(self._stack_switches() if training else {}),
        }
        if payload["runtime"] == "llama_cpp":
            payload["llama_cpp"] = self._llama_cpp_options()
        elif payload["runtime"] == "vllm":
            payload["vllm"] = self._vllm_settings()
        return payload

    def _stack_switches(self) -> dict[str, Any]:
        """The training stack and the switches the visitor set (empty ones: the stack's)."""
        c = self.cleaned_data
        tri = {"on": True, "off": False}
        switches: dict[str, Any] = {
            "training_stack": c.get("stack") or "hf_trainer",
            "optimizer_impl": c.get("opt_impl") or None,
            "loss": c.get("loss") or None,
            "activation_checkpointing": c.get("act_ckpt") or None,
            "activation_offloading": tri.get(c.get("act_offload") or ""),
            "optimizer_offload": tri.get(c.get("opt_offload") or ""),
            "parameter_offload": tri.get(c.get("param_offload") or ""),
            "sequence_parallel": tri.get(c.get("seq_par") or ""),
            "pipeline_parallel": c.get("pp") or 1,
            "context_parallel": c.get("cp") or 1,
            "micro_batches": c.get("micro"),
        }
        return switches

    def _llama_cpp_options(self) -> dict[str, Any]:
        """llama-server options: -c holds ``batch`` slots (-np) of ``seq`` tokens each."""
        c = self.cleaned_data
        return {
            "gguf_type": c.get("gguf") or None,
            "n_ctx": c["seq"] * c["batch"],
            "n_parallel": c["batch"],
            "n_ubatch": c.get("ubatch") or DEFAULTS["ubatch"],
            "n_batch": c.get("nbatch") or DEFAULTS["nbatch"],
            "flash_attention": (c.get("fa") or DEFAULTS["fa"]) == "on",
            "swa_full": (c.get("swa") or DEFAULTS["swa"]) == "on",
            "kv_unified": (c.get("kvu") or DEFAULTS["kvu"]) == "on",
            "n_cpu_moe": c.get("ncmoe") or 0,
            "cpu_moe": (c.get("cmoe") or DEFAULTS["cmoe"]) == "on",
            "override_tensors": [entry.model_dump() for entry in c.get("ot_entries") or ()],
            "tensor_split": c.get("ts_shares") or None,
            "cache_type_k": c.get("ctk") or DEFAULTS["ctk"],
            "cache_type_v": c.get("ctv") or DEFAULTS["ctv"],
            # No GPU: every layer stays on the CPU (-ngl 0), whatever -ngl says.
            "n_gpu_layers": 0 if c.get("gpu") == NO_GPU else c.get("ngl"),
        }

    def _vllm_settings(self) -> dict[str, Any]:
        """vllm serve options: the context length is --max-model-len."""
        c = self.cleaned_data
        return {
            "gpu_memory_utilization": c.get("util") or DEFAULTS["util"],
            "max_model_len": c["seq"],
            "max_num_seqs": c.get("max_seqs"),
            "max_num_batched_tokens": c.get("batched"),
            "quantization": c.get("quant") or None,
            "kv_cache_dtype": c.get("vkv") or "auto",
            "enforce_eager": bool(c.get("eager")),
            "block_size": c.get("block") or DEFAULTS["block"],
        }


class _SharedFields(dict[str, forms.Field]):
    """The form's fields, shared by every instance instead of deep-copied per request.

    Django copies ``base_fields`` into each form so that a form may change its own fields; this
    one never does (help texts are set once below), and copying ~45 fields with their choices and
    widgets was a fifth of a fresh recompute's time (issue 16).
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, forms.Field]:
        return dict(self)


class _HelpText:
    """A field's help text, translated when it is shown. Its truth is known without translating
    it: Django's BoundField tests every field's help text for truth as the form is cleaned, which
    translated some fifty texts on each recompute that renders none of them (issue 16)."""

    __slots__ = ("text",)

    def __init__(self, text: Any) -> None:
        self.text = text

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        return str(self.text)


for _name, _text in CalculatorForm.HELP.items():
    CalculatorForm.base_fields[_name].help_text = _HelpText(_text)  # type: ignore[assignment]
CalculatorForm.base_fields = _SharedFields(CalculatorForm.base_fields)


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
    "runtime": "runtime",
    "n_gpu_layers": "ngl",
    "n_ubatch": "ubatch",
    "n_batch": "nbatch",
    "gpu_memory_utilization": "util",
    "max_num_seqs": "max_seqs",
    "max_num_batched_tokens": "batched",
    "block_size": "block",
    "pipeline_parallel": "pp",
    "context_parallel": "cp",
    "micro_batches": "micro",
    "training_stack": "stack",
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
    if isinstance(error, ArithmeticError):
        form.add_error(
            None,
            _("These sizes are too large to compute; check the model's size and the workload."),
        )
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
    runtime = forms.ChoiceField(label=_("Runtime"), choices=RUNTIME_CHOICES, required=False)
    seq = _int(_("Context length (tokens)"), 1, 1_048_576)
    batch = _int(_("Batch size"), 1, 4096)
    gpu = forms.CharField(label=_("Your GPU"), max_length=100, required=False)
    gb = _float(_("…or its memory (GB)"), 1, 100_000)
    count = _int(_("Number of GPUs"), 1, 1024)
    ram = _float(_("System RAM (GB)"), 1, 100_000)
    stack = forms.ChoiceField(label=_("Training stack"), choices=STACK_CHOICES, required=False)
    ckpt = forms.ChoiceField(
        label=_("Gradient checkpointing"),
        choices=[("", _("the mode's default")), *ON_OFF_CHOICES],
        required=False,
        help_text=_(
            "Default: on for LoRA and QLoRA, as their usual recipes run them (PEFT's prepare_model_for_kbit_training, the QLoRA paper's scripts, Unsloth, torchtune); off for full fine-tuning, the Trainer's default."
        ),
    )

    DEFAULTS: dict[str, Any] = {
        "mode": "inference",
        "runtime": "transformers",
        "seq": 4096,
        "batch": 1,
        "count": 1,
        "ram": 64,  # llama.cpp's experts-in-RAM list: a common desktop's RAM
    }
    # Checkpointing by default where the usual recipes turn it on: PEFT's
    # prepare_model_for_kbit_training(use_gradient_checkpointing=True) for QLoRA, the QLoRA
    # paper's qlora.py (--gradient_checkpointing True), Unsloth (use_gradient_checkpointing=
    # "unsloth") and torchtune's LoRA recipes (enable_activation_checkpointing: True). Full
    # fine-tuning keeps TrainingArguments' default, gradient_checkpointing=False.
    CHECKPOINTING_BY_DEFAULT = frozenset({"lora", "qlora"})

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        mode = cleaned.get("mode")
        if mode in (None, "inference"):
            # Inference reads neither: left out of the page's key and of its links.
            cleaned["stack"] = cleaned["ckpt"] = None
        else:
            cleaned["stack"] = cleaned.get("stack") or "hf_trainer"
            default = "on" if mode in self.CHECKPOINTING_BY_DEFAULT else "off"
            cleaned["ckpt"] = cleaned.get("ckpt") or default
        check_runtime(self, cleaned)
        if cleaned.get("runtime") != "llama_cpp":
            cleaned["ram"] = None  # only llama.cpp keeps experts in RAM: left out of the key
        seq, batch = cleaned.get("seq"), cleaned.get("batch")
        if cleaned.get("runtime") == "llama_cpp" and seq and batch and seq * batch > MAX_SEQ_LEN:
            # The table runs llama.cpp with -c = context × batch (one slot per sequence).
            self.add_error(
                "batch",
                _(
                    "llama.cpp holds context × batch tokens (-c); that is at most %(n)s: lower the batch or the context."
                )
                % {"n": number_format(MAX_SEQ_LEN, force_grouping=True)},
            )
        return cleaned

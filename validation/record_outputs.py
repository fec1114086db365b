"""Record what the app answers for a few hundred varied inputs, to prove a restructuring changed
no behaviour (issue 26): the API's JSON, both exports (Markdown and JSON), the page's result
fragment and its deferred part, and the /fits/ page, for every mode, runtime, training stack and
model family kind in the catalogue, spread over the eight languages.

    .venv/bin/python validation/record_outputs.py record /tmp/before
    .venv/bin/python validation/record_outputs.py compare /tmp/before    # exit 1 on any change

Run it on the commit before a change and on the change itself; ``compare`` lists every output
that differs, byte for byte. The few parts that differ between two runs of the same commit (the
CSRF token of the "Save link" form) are blanked before writing.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_DEBUG", "1")
os.environ.setdefault("DJANGO_SECRET_KEY", "record-outputs-" + "x" * 40)

LANGUAGES = ["", "es", "de", "fr", "ja", "ko", "pt-br", "zh-hans"]
GPUS = ["rtx-4090-24gb", "rtx-3060-12gb", "a100-sxm-40gb", "h100-sxm-80gb", "rtx-3090-24gb"]
MODES = ["inference", "full_finetune", "lora", "qlora", "pretrain"]
STACKS = ["hf_trainer", "hf_trainer_liger", "unsloth", "torchtune", "litgpt", "deepspeed", "fsdp2", "megatron"]  # fmt: skip
VOLATILE = [
    (
        re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"'),
        b'name="csrfmiddlewaretoken" value=""',
    ),
]


def cases(presets: list[str]) -> list[tuple[str, dict[str, str]]]:
    """(language, query) pairs: every preset family kind under each mode and runtime, each
    training stack with its switches, and custom shapes and pasted configs."""
    out: list[dict[str, str]] = []
    languages = itertools.cycle(LANGUAGES)
    gpus = itertools.cycle(GPUS)
    for i, model in enumerate(presets):
        mode = MODES[i % len(MODES)]
        out.append({"model": model, "mode": mode, "gpu": next(gpus), "seq": "2048", "batch": "2"})
        out.append({"model": model, "runtime": "llama_cpp", "gpu": next(gpus), "seq": "8192", "ram": "32"})  # fmt: skip
        out.append({"model": model, "runtime": "vllm", "gpu": "h100-sxm-80gb", "seq": "8192"})
    for i, stack in enumerate(STACKS):
        for mode in ("full_finetune", "lora", "pretrain"):
            out.append(
                {
                    "model": presets[(i * 3) % len(presets)],
                    "mode": mode,
                    "stack": stack,
                    "gpu": "a100-sxm-40gb",
                    "gpus": "8",
                    "zero": str(i % 4),
                    "ckpt": "on" if i % 2 else "",
                    "opt_offload": "on" if i % 3 == 0 else "",
                    "ram": "512",
                    "batch": "4",
                    "seq": "4096",
                    "train_b": "1",
                    "price": "2",
                }
            )
    for precision in ("bf16", "fp32", "fp8", "int8", "int4", "int2"):
        out.append({"model": "Llama 3.1 8B", "precision": precision, "kv": "fp8", "gpu": "rtx-4090-24gb"})  # fmt: skip
    for gguf in ("Q4_K_M", "Q8_0", "IQ2_XXS", "F16"):
        out.append({"model": "Qwen3 30B-A3B", "runtime": "llama_cpp", "gguf": gguf, "ngl": "24", "ctk": "q8_0", "ctv": "q8_0", "gpu": "rtx-3060-12gb", "ram": "64"})  # fmt: skip
    out.append({"source": "custom", "params": "7", "layers": "32", "hidden": "4096", "heads": "32", "kv_heads": "8", "inter": "14336", "vocab": "128256", "gpu": "rtx-4090-24gb"})  # fmt: skip
    out.append({"source": "custom", "params": "47", "layers": "32", "hidden": "4096", "heads": "32", "kv_heads": "8", "inter": "14336", "vocab": "32000", "experts": "8", "active_experts": "2", "mode": "lora"})  # fmt: skip
    out.append({"model": "Mistral 7B", "mode": "qlora", "lora_rank": "64", "lora_targets": "all-linear", "gpu": "rtx-4090-24gb", "attn": "eager"})  # fmt: skip
    out += training_cases()
    return [(next(languages), query) for query in out]


def training_cases() -> list[dict[str, str]]:
    """The training paths the cases above leave out: pipeline and context parallelism with
    micro-batches, Megatron's sequence parallelism, activation, optimizer and parameter offload,
    every optimizer, implementation, loss and checkpointing choice, LoRA targets, mixed and fp32
    precision, vision, MoE, MLA and state-space models, and a pipeline deeper than the model."""
    big = {"gpu": "h100-sxm-80gb", "ram": "1024", "batch": "2", "seq": "4096"}
    # fmt: off
    out: list[dict[str, str]] = [
        {"model": "Llama 3.1 8B", "mode": "pretrain", "stack": "megatron", "gpus": "8", "tp": "2", "pp": "2", "micro": "4", "zero": "1", "mixed": "on", **big},
        {"model": "Llama 3.1 8B", "mode": "pretrain", "stack": "megatron", "gpus": "16", "tp": "2", "pp": "4", "cp": "2", "micro": "1", **big},
        {"model": "Qwen3 0.6B", "mode": "full_finetune", "stack": "megatron", "gpus": "3", "pp": "3", "micro": "8", **big},
        {"model": "Qwen3 0.6B", "mode": "pretrain", "stack": "megatron", "gpus": "4", "pp": "2", "tp": "2", "seq_par": "off", **big},
        {"model": "Llama 3.2 1B", "mode": "full_finetune", "gpus": "4", "pp": "2", "cp": "2", **big},
        {"model": "Mistral 7B", "mode": "lora", "gpus": "4", "cp": "4", "zero": "2", **big},
        {"model": "Mistral 7B", "mode": "full_finetune", "act_ckpt": "full", "act_offload": "on", "mixed": "on", **big},
        {"model": "Mistral 7B", "mode": "full_finetune", "stack": "deepspeed", "gpus": "4", "pp": "2", "zero": "1", "act_offload": "on", "act_ckpt": "full", **big},
        {"model": "Gemma 3 4B IT", "mode": "qlora", "stack": "unsloth", "images": "2", "gpu": "rtx-4090-24gb", "ram": "64"},
        {"model": "Llama 3.1 8B", "mode": "lora", "stack": "torchtune", "opt_offload": "on", "act_offload": "on", "gpu": "rtx-4090-24gb", "ram": "64"},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "stack": "fsdp2", "gpus": "8", "zero": "3", "param_offload": "on", "opt_offload": "on", "mixed": "on", **big},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "stack": "deepspeed", "gpus": "8", "zero": "3", "param_offload": "on", "opt_offload": "on", "ckpt": "on", "train_b": "1", "price": "3", **big},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "stack": "deepspeed", "gpus": "2", "zero": "2", "precision": "fp16", **big},
        {"model": "Llama 3.1 8B", "mode": "lora", "stack": "deepspeed", "gpus": "2", "zero": "3", "param_offload": "on", **big},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "stack": "hf_trainer", "gpus": "8", "zero": "0", "param_offload": "on", **big},
        {"model": "Qwen3 30B-A3B", "mode": "full_finetune", "gpus": "8", "tp": "2", "zero": "3", "mixed": "on", "ckpt": "on", **big},
        {"model": "DeepSeek-V2-Lite (16B)", "mode": "lora", "lora_targets": "q_proj", **big},
        {"model": "DeepSeek-V2-Lite (16B)", "mode": "full_finetune", "gpus": "8", "zero": "3", "optimizer": "adafactor", **big},
        {"model": "Falcon Mamba 7B", "mode": "lora", **big},
        {"model": "Jamba 1.5 Mini", "mode": "qlora", "act_ckpt": "full", **big},
        {"model": "Qwen3-Next 80B-A3B", "mode": "full_finetune", "gpus": "8", "zero": "3", "ckpt": "on", **big},
        {"model": "Falcon-H1 0.5B", "mode": "pretrain", "stack": "megatron", "gpus": "2", "tp": "2", **big},
        {"model": "Qwen2-VL 2B", "mode": "full_finetune", "images": "4", **big},
        {"model": "Llama 3.2 11B Vision", "mode": "lora", "stack": "litgpt", **big},
        {"model": "Mistral Small 3.1 / 3.2 24B", "mode": "qlora", "stack": "torchtune", "images": "0", **big},
        {"model": "Gemma 4 26B-A4B", "mode": "lora", "stack": "hf_trainer_liger", **big},
        {"model": "Gemma 2 2B", "mode": "full_finetune", "attn": "eager", "seq": "1024", "gpu": "a100-sxm-40gb"},
        {"model": "GPT-2 (124M)", "mode": "lora", "lora_targets": "gate_proj", "gpu": "rtx-3060-12gb"},
        {"model": "GPT-2 (124M)", "mode": "lora", "lora_targets": "down_proj", "optimizer": "adafactor", "gpu": "rtx-3060-12gb"},
        {"model": "GPT-2 (124M)", "mode": "pretrain", "gpus": "64", "pp": "64", **big},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "precision": "fp32", "gpus": "4", "zero": "1", **big},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "precision": "fp16", "mixed": "on", "gpus": "4", "zero": "2", **big},
        {"model": "Llama 3.1 8B", "mode": "lora", "precision": "int8", **big},
        {"model": "Llama 3.1 8B", "mode": "lora", "precision": "fp8", "stack": "unsloth", **big},
        {"model": "Llama 3.1 8B", "mode": "qlora", "precision": "fp16", "stack": "litgpt", **big},
        {"model": "Llama 3.1 8B", "mode": "full_finetune", "ckpt": "on", "act_ckpt": "none", **big},
        {"model": "Llama 3.1 8B", "mode": "pretrain", "stack": "megatron", "gpus": "8", "tp": "4", "seq_par": "off", "act_ckpt": "full", **big},
    ]
    optimizers = ["adamw", "adamw_8bit", "paged_adamw", "paged_adamw_8bit", "sgd", "sgd_momentum", "adafactor", "lion"]
    # fmt: on
    for i, optimizer in enumerate(optimizers):
        for mode in ("full_finetune", "lora"):
            out.append({"model": "Llama 3.2 1B", "mode": mode, "optimizer": optimizer, "gpus": "2", "zero": str(i % 3), "mixed": "on" if i % 2 else "", **big})  # fmt: skip
        out.append({"model": "Mistral 7B", "mode": "qlora", "optimizer": optimizer, "stack": "deepspeed" if i % 2 else "fsdp2", **big})  # fmt: skip
    for impl in ("fused", "foreach", "for_loop"):
        for mode in ("full_finetune", "lora", "pretrain"):
            out.append({"model": "Qwen2.5 1.5B", "mode": mode, "opt_impl": impl, "gpus": "2", "zero": "1", **big})  # fmt: skip
    for loss in ("full", "chunked", "fused_linear"):
        for mode in ("full_finetune", "lora", "qlora"):
            out.append({"model": "Gemma 2 2B", "mode": mode, "loss": loss, "mixed": "on" if mode == "full_finetune" else "", **big})  # fmt: skip
    for ckpt in ("none", "full", "selective"):
        for mixed in ("on", ""):
            out.append({"model": "Phi-3.5 mini Instruct", "mode": "full_finetune", "act_ckpt": ckpt, "mixed": mixed, "gpus": "4", "tp": "2", "seq_par": "on", **big})  # fmt: skip
            out.append({"model": "Phi-3.5 mini Instruct", "mode": "lora", "act_ckpt": ckpt, "mixed": mixed, "zero": "3", "gpus": "2", **big})  # fmt: skip
    for target in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        out.append({"model": "Qwen3 30B-A3B", "mode": "lora", "lora_targets": target, "lora_rank": "8", **big})  # fmt: skip
    return out


def outputs(client, language: str, query: dict[str, str]) -> dict[str, bytes]:
    prefix = f"/{language}" if language else ""
    qs = urlencode(query)
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HOST": "localhost"}
    plain = {"HTTP_HOST": "localhost"}
    got = {
        "api.json": client.get(f"/api/v1/estimate?{qs}", **plain),
        "export.json": client.get(f"{prefix}/?{qs}&format=json", **plain),
        "export.md": client.get(f"{prefix}/?{qs}&format=md", **plain),
        "fragment.html": client.get(f"{prefix}/?{qs}", **htmx),
        "more.html": client.get(f"{prefix}/?{qs}&part=more", **htmx),
    }
    return {name: f"{r.status_code}\n".encode() + _stable(r.content) for name, r in got.items()}


def _stable(content: bytes) -> bytes:
    for pattern, replacement in VOLATILE:
        content = pattern.sub(replacement, content)
    return content


def fits_pages(client) -> dict[str, bytes]:
    pages = {}
    for i, query in enumerate(
        [
            {},
            {"mode": "qlora", "gpu": "rtx-4060-laptop-8gb"},
            {"runtime": "llama_cpp", "gpu": "rtx-3060-12gb"},
            {"runtime": "vllm", "precision": "fp8"},
            {"mode": "full_finetune", "stack": "deepspeed", "ckpt": "on", "gb": "80"},
            {"mode": "pretrain", "stack": "megatron", "gb": "80", "count": "8"},
            {"mode": "lora", "stack": "unsloth", "gpu": "rtx-4090-24gb"},
            {"mode": "full_finetune", "stack": "fsdp2", "gb": "40", "count": "4"},
        ]
    ):
        response = client.get(f"/{LANGUAGES[i % 8]}/fits/?{urlencode(query)}".replace("//", "/"))
        pages[f"fits-{i}.html"] = f"{response.status_code}\n".encode() + _stable(response.content)
    return pages


def collect() -> dict[str, bytes]:
    import django

    django.setup()
    from django.core.cache import cache
    from django.test import Client
    from django.test.utils import setup_test_environment

    from calculator.catalogue.models import ModelPreset

    setup_test_environment()
    cache.clear()
    client = Client()
    # One preset per model type (the family kinds), in a fixed order.
    seen: dict[str, str] = {}
    for preset in ModelPreset.objects.filter(reviewed=True).order_by("slug"):
        kind = (preset.config or {}).get("model_type", preset.family)
        seen.setdefault(kind, preset.display_name)
    found: dict[str, bytes] = {}
    for n, (language, query) in enumerate(cases(sorted(seen.values()))):
        for name, body in outputs(client, language, query).items():
            found[f"{n:04d}-{name}"] = body
    found.update(fits_pages(client))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in {"record", "compare"}:
        print(__doc__)
        return 2
    folder = Path(argv[2])
    found = collect()
    if argv[1] == "record":
        folder.mkdir(parents=True, exist_ok=True)
        for name, body in found.items():
            (folder / name).write_bytes(body)
        digest = hashlib.sha256(b"".join(found[k] for k in sorted(found))).hexdigest()[:16]
        print(f"{len(found)} outputs of {len({k[:4] for k in found})} inputs written to {folder} ({digest})")  # fmt: skip
        return 0
    changed = [n for n in sorted(found) if not (folder / n).exists() or (folder / n).read_bytes() != found[n]]  # fmt: skip
    missing = sorted({p.name for p in folder.iterdir()} - set(found))
    for name in changed + missing:
        print("differs:" if name in changed else "missing:", name)
    print(f"{len(found)} outputs compared: {len(changed)} differ, {len(missing)} missing")
    return 1 if changed or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

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
    return [(next(languages), query) for query in out]


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

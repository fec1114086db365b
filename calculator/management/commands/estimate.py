"""``manage.py estimate --json FILE [--gpu SLUG | --vram GB]``: the calculation for request JSON.

Prints what the API and the page's JSON export give (calculator/calculation.py): the estimator's
result, the model, the inputs, the runtime's buffers and commands, and with a GPU its verdict.
A request's ``model`` may be ``{"hub": "org/name"}`` (or a Hub URL): the repository's
config.json is used, looked up as the page and the API do (calculator/hub.py). With the ``vllm``
runtime the GPU's memory comes from ``--gpu``/``--vram`` unless the request gives
``vllm.gpu_memory_bytes``.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from pydantic import TypeAdapter, ValidationError

from calculator.calculation import (
    Calculation,
    Card,
    own_card,
    with_card_memory,
    with_vllm_context,
)
from calculator.estimator import ConfigError, EstimateRequest
from calculator.hub import HubError, hub_preset
from calculator.selectors import gpu_list, preset_description, preset_resolve

# Far beyond a list of requests with pasted configs; a bound, so `--json /dev/zero` stops.
MAX_INPUT_CHARS = 64 * 1024 * 1024
_REQUESTS: TypeAdapter[EstimateRequest | list[EstimateRequest]] = TypeAdapter(
    EstimateRequest | list[EstimateRequest]
)


def _with_gpu_memory(text: str, card: Card | None) -> str:
    """Each request on the chosen card (vLLM's memory from it, unless the request gives it),
    vLLM's context from its ``seq_len`` as on the page and in the API."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text

    def on_card(request: Any) -> Any:
        if not isinstance(request, dict):
            return request
        return with_card_memory(with_vllm_context(request), card)

    data = [on_card(r) for r in data] if isinstance(data, list) else on_card(data)
    return json.dumps(data)


def _with_hub_configs(text: str) -> str:
    """Requests whose ``model`` is ``{"hub": "org/name"}`` get that repository's config.json
    (from the catalogue, a stored import, or the Hugging Face Hub); other text is unchanged."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text  # the validator below reports it
    requests = data if isinstance(data, list) else [data]
    changed = False
    for request in requests:
        model = request.get("model") if isinstance(request, dict) else None
        if isinstance(model, dict) and isinstance(model.get("hub"), str) and len(model) == 1:
            preset = hub_preset(
                text=model["hub"], catalogue=lambda name: preset_resolve(text=name).preset
            )
            request["model"] = preset_description(preset=preset).model_dump(exclude_none=True)
            changed = True
    return json.dumps(data) if changed else text


class Command(BaseCommand):
    help = "Estimate GPU memory for one request object, or a list of them, read as JSON."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--json", dest="path", required=True, help="File with the request(s); '-' for stdin."
        )
        card = parser.add_mutually_exclusive_group()
        card.add_argument("--gpu", help="A GPU slug (see /api/v1/gpus) for a fit verdict.")
        card.add_argument("--vram", type=float, help="Your card's memory in GB, as marketed.")

    def handle(self, *args: Any, **options: Any) -> None:
        path: str = options["path"]
        try:
            if path == "-":
                text = sys.stdin.read(MAX_INPUT_CHARS + 1)
            else:
                with open(path, encoding="utf-8") as file:
                    text = file.read(MAX_INPUT_CHARS + 1)
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"Cannot read {path}: {error}", returncode=2) from error
        if len(text) > MAX_INPUT_CHARS:
            raise CommandError(
                f"{path} is longer than {MAX_INPUT_CHARS:,} characters: not a request.",
                returncode=2,
            )
        card: Card | None = None
        if options.get("vram"):
            if not 1 <= options["vram"] <= 100_000:
                raise CommandError("--vram must be between 1 and 100000 GB.", returncode=2)
            card = own_card(options["vram"])
        elif options.get("gpu"):
            card = gpu_list().filter(slug=options["gpu"]).first()
            if card is None:
                raise CommandError(f"No GPU with slug {options['gpu']!r}.", returncode=2)
        try:
            text = _with_gpu_memory(_with_hub_configs(text), card)
        except HubError as error:
            raise CommandError(error.message, returncode=2) from error
        try:
            parsed = _REQUESTS.validate_json(text)
            requests = parsed if isinstance(parsed, list) else [parsed]
            results = [Calculation(request, gpu=card).payload() for request in requests]
        except ValidationError as error:
            self.stderr.write(error.json(indent=2, include_url=False))
            raise CommandError("Invalid request; see the errors above.", returncode=2) from error
        except ConfigError as error:
            raise CommandError(f"Invalid model config: {error}", returncode=2) from error
        except (ValueError, ArithmeticError, RecursionError) as error:
            # Input the validators above let through but no estimate can be made of: still the
            # input's fault, reported as such rather than as a traceback.
            raise CommandError(f"Cannot estimate this request: {error}", returncode=2) from error
        output = results if isinstance(parsed, list) else results[0]
        self.stdout.write(json.dumps(output, indent=2))

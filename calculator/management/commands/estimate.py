"""``manage.py estimate --json FILE [--gpu SLUG | --vram GB]``: the calculation for request JSON.

Reads what ``POST /api/v1/estimate`` takes (one body, or a list of them) and prints what the API
and the page's JSON export give (calculator/result/calculation.py): the estimator's result, the model,
the inputs, the runtime's buffers and commands, and with a GPU its verdict. ``model`` may name a
catalogue preset (``{"preset": "qwen2-7b"}``) or a Hub repository (``{"hub": "org/name"}``, or
a Hub URL; looked up as the page and the API do, calculator/catalogue/hub.py) besides a shape or a config;
``gpu`` and ``ram_gb`` are the API's. ``--gpu``/``--vram`` choose the card for every request, in
place of its ``gpu``. With the ``vllm`` runtime the card's memory is vLLM's unless the request
gives ``vllm.gpu_memory_bytes``, and ``seq_len`` is its ``--max-model-len`` as on the page.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from ninja.errors import HttpError
from pydantic import ValidationError

from calculator.api.v1 import (
    ApiEstimateRequest,
    api_card,
    api_cards,
    api_request_resolve,
    binding_card,
    config_error_field,
    field_path,
)
from calculator.catalogue.hub import HubError
from calculator.estimator import ConfigError
from calculator.result.calculation import Calculation, Card, own_card

# Far beyond a list of requests with pasted configs; a bound, so `--json /dev/zero` stops.
MAX_INPUT_CHARS = 64 * 1024 * 1024


class RequestErrors(Exception):
    """A request the API would answer with a 4xx: its ``(field, message)`` pairs."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        super().__init__(items)
        self.items = items


def _validation_items(error: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    """pydantic's errors as the API words them: the body's dotted path and the message."""
    items = []
    for entry in error.errors():
        path = field_path(entry["loc"])
        items.append((f"{prefix}.{path}" if prefix and path else prefix or path, str(entry["msg"])))
    return items


def _request(body: Any, where: str) -> ApiEstimateRequest:
    try:
        return ApiEstimateRequest.model_validate(body)
    except ValidationError as error:
        raise RequestErrors(_validation_items(error, where)) from error


def _calculation(payload: ApiEstimateRequest, card: Card | None, where: str) -> dict[str, Any]:
    """One body's answer, as the API gives it (the API's ``estimate_post``, without HTTP);
    what the API answers with a 4xx raises ``RequestErrors`` with the API's fields."""

    def at(field: str) -> str:
        return f"{where}.{field}" if where and field else where or field

    cards: list[Card] = []
    try:
        if card is None:
            card, cards = api_cards(payload)
    except HttpError as error:
        raise RequestErrors([(at("gpus" if payload.gpus else "gpu"), str(error))]) from error
    try:
        request, preset = api_request_resolve(payload, card, cards=cards)
        card = binding_card(request, card, cards)
        calculation = Calculation(request, gpu=card, preset=preset, host_ram_gb=payload.ram_gb)
        return calculation.payload()
    except HttpError as error:  # a preset nothing matches
        raise RequestErrors([(at("model"), str(error))]) from error
    except HubError as error:
        raise RequestErrors([(at("model.hub"), error.message)]) from error
    except ConfigError as error:
        raise RequestErrors([(at(config_error_field(payload, error)), str(error))]) from error
    except ValidationError as error:
        raise RequestErrors(_validation_items(error, where)) from error


class Command(BaseCommand):
    help = (
        "Estimate GPU memory for one request object, or a list of them, read as JSON: the body "
        "POST /api/v1/estimate takes."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--json", dest="path", required=True, help="File with the request(s); '-' for stdin."
        )
        card = parser.add_mutually_exclusive_group()
        card.add_argument(
            "--gpu", help="A GPU slug (see /api/v1/gpus) for a fit verdict, for every request."
        )
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
            try:
                card = api_card(options["gpu"])
            except HttpError as error:
                raise CommandError(f"No GPU with slug {options['gpu']!r}.", returncode=2) from error
        try:
            document = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as error:
            raise CommandError(f"{path} is not JSON: {error}", returncode=2) from error
        many = isinstance(document, list)
        bodies = document if isinstance(document, list) else [document]
        try:
            results = [
                _calculation(
                    _request(body, f"[{i}]" if many else ""), card, f"[{i}]" if many else ""
                )
                for i, body in enumerate(bodies)
            ]
        except RequestErrors as error:
            for field, message in error.items:
                self.stderr.write(f"{field}: {message}" if field else message)
            raise CommandError("Invalid request; see the errors above.", returncode=2) from error
        except (ValueError, ArithmeticError, RecursionError) as error:
            # Input the validators above let through but no estimate can be made of: still the
            # input's fault, reported as such rather than as a traceback.
            raise CommandError(f"Cannot estimate this request: {error}", returncode=2) from error
        output = results if many else results[0]
        self.stdout.write(json.dumps(output, indent=2))

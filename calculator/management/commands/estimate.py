"""``manage.py estimate --json FILE``: run the estimator on request JSON, print results as JSON.

A request's ``model`` may be ``{"hub": "org/name"}`` (or a Hub URL): the repository's
config.json is used, looked up as the page and the API do (calculator/hub.py).
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from pydantic import TypeAdapter, ValidationError

from calculator.estimator import ConfigError, EstimateRequest, estimate
from calculator.hub import HubError, hub_preset
from calculator.selectors import preset_resolve

_REQUESTS: TypeAdapter[EstimateRequest | list[EstimateRequest]] = TypeAdapter(
    EstimateRequest | list[EstimateRequest]
)


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
            request["model"] = {"config": preset.config}
            changed = True
    return json.dumps(data) if changed else text


class Command(BaseCommand):
    help = "Estimate GPU memory for one request object, or a list of them, read as JSON."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--json", dest="path", required=True, help="File with the request(s); '-' for stdin."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: str = options["path"]
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error}", returncode=2) from error
        try:
            text = _with_hub_configs(text)
        except HubError as error:
            raise CommandError(error.message, returncode=2) from error
        try:
            parsed = _REQUESTS.validate_json(text)
            requests = parsed if isinstance(parsed, list) else [parsed]
            results = [estimate(request).model_dump(mode="json") for request in requests]
        except ValidationError as error:
            self.stderr.write(error.json(indent=2, include_url=False))
            raise CommandError("Invalid request; see the errors above.", returncode=2) from error
        except ConfigError as error:
            raise CommandError(f"Invalid model config: {error}", returncode=2) from error
        output = results if isinstance(parsed, list) else results[0]
        self.stdout.write(json.dumps(output, indent=2))

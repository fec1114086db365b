"""Models named by their Hugging Face Hub repository id, fetched once and kept as imported presets.

``hub_model_import(repo_id=...)`` returns the preset for a repository: the row a previous look-up
stored, or a new one built from the repository's ``config.json`` and the Hub's safetensors
metadata (exact tensor-element count per stored dtype). New rows are marked imported and not
reviewed: they answer their own repository id only, until an admin promotes them to the catalogue.

Requests go through ``huggingface_hub`` to ``HF_ENDPOINT`` (default https://huggingface.co, or a
mirror) with ``HF_TOKEN`` when set, both read when a look-up runs, each bounded by
``settings.HUB_TIMEOUT_SECONDS`` and never retried, so a slow Hub costs a page a few seconds at
most. Every failure becomes a ``HubError`` whose ``kind`` says what went wrong and whose
message is translated.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx2
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from huggingface_hub import HfApi, get_session, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    NotASafetensorsRepoError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    SafetensorsParsingError,
)
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, validate_repo_id

from calculator.estimator import Architecture, ConfigError
from calculator.estimator.checkpoint import stored_bytes
from calculator.models import ModelAlias, ModelPreset, PresetOrigin, Quantization

DEFAULT_ENDPOINT = "https://huggingface.co"
HUB_HOSTS = frozenset({"huggingface.co", "www.huggingface.co", "hf.co"})
MAX_CONFIG_BYTES = 1 << 20
# Past this many shards a mirror without the Hub's safetensors summary is not asked for headers.
MAX_SHARD_HEADERS = 16

HubErrorKind = Literal["invalid", "offline", "gated", "missing", "malformed", "withdrawn"]


class HubError(Exception):
    """A repository that cannot become a preset; ``kind`` says why, the message is for people."""

    def __init__(self, kind: HubErrorKind, message: Any) -> None:
        super().__init__(str(message))
        self.kind = kind
        self.message = str(message)


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_repo_id(text: str) -> str | None:
    """The model repository a typed text names, or None when it does not look like one.

    Accepts ``org/name`` and a model page URL on the Hub or on ``HF_ENDPOINT``
    (``https://huggingface.co/org/name/tree/main`` and the like). A URL of a dataset or a
    Space, or an id the Hub would refuse, raises ``HubError("invalid")``.
    """
    value = text.strip()
    if "://" in value or value.split("/", 1)[0].lower() in HUB_HOSTS:
        parts = urlsplit(value if "://" in value else f"https://{value}")
        hosts = HUB_HOSTS | {urlsplit(hub_endpoint()).netloc.lower()}
        if parts.netloc.lower() not in hosts:
            return None
        segments = [segment for segment in parts.path.split("/") if segment]
        if len(segments) < 2 or segments[0] in {"datasets", "spaces", "api"}:
            raise HubError("invalid", _invalid_message(value))
        value = "/".join(segments[:2])
    elif value.count("/") != 1 or re.search(r"\s", value):
        return None
    try:
        validate_repo_id(value)
    except HFValidationError as error:
        raise HubError("invalid", _invalid_message(value)) from error
    return value


def _invalid_message(text: str) -> Any:
    return _(
        "“%(text)s” is not a model repository on the Hugging Face Hub (organisation/name)."
    ) % {"text": text}


def hub_cached_preset(*, repo_id: str) -> ModelPreset | None:
    """The preset already stored for this repository (imported or curated), active first.

    An inactive one means an admin withdrew the model: ``HubError("withdrawn")``, no fetch.
    """
    preset = (
        ModelPreset.objects.filter(hf_repo__iexact=repo_id)
        .order_by("-active", "-reviewed", "pk")
        .first()
    )
    if preset is not None and not preset.active:
        raise HubError(
            "withdrawn",
            _("“%(repo)s” has been withdrawn from this calculator.") % {"repo": repo_id},
        )
    return preset


def hub_resolve(*, text: str, catalogue: Callable[[str], ModelPreset | None]) -> ModelPreset | None:
    """The preset a typed repository id or Hub URL names; None when the text is not one.

    The catalogue answers first (``org/name`` as an alias, so a URL of a catalogue model needs
    no request), then a stored import, then the Hub.
    """
    repo_id = hub_repo_id(text)
    if repo_id is None:
        return None
    return catalogue(repo_id) or hub_model_import(repo_id=repo_id)


def hub_preset(*, text: str, catalogue: Callable[[str], ModelPreset | None]) -> ModelPreset:
    """``hub_resolve`` for an explicit ``{"hub": ...}`` (API, CLI): anything else is invalid."""
    preset = hub_resolve(text=text, catalogue=catalogue)
    if preset is None:
        raise HubError("invalid", _invalid_message(text))
    return preset


def hub_model_import(*, repo_id: str) -> ModelPreset:
    """The preset for a Hub repository: stored before, or fetched now and stored as an import.

    Raises ``HubError`` when the Hub cannot be reached, the repository is gated, private or
    missing, or its ``config.json`` is absent or unusable.
    """
    cached = hub_cached_preset(repo_id=repo_id)
    if cached is not None:
        return cached
    token = os.environ.get("HF_TOKEN") or False
    api = HfApi(endpoint=hub_endpoint(), token=token)
    timeout = float(settings.HUB_TIMEOUT_SECONDS)
    with _translated_errors(repo_id):
        info = api.model_info(repo_id, expand=["sha", "safetensors"], timeout=timeout)
        revision = info.sha or "main"
        config = _fetch_config(api, repo_id, revision, timeout, token)
    try:
        arch = Architecture.from_hf_config(config)
    except (ConfigError, ValueError, TypeError) as error:
        raise HubError(
            "malformed",
            _("The config.json of “%(repo)s” cannot be used: %(reason)s")
            % {"repo": repo_id, "reason": error},
        ) from error
    if info.safetensors is not None:
        stored = {str(k): int(v) for k, v in info.safetensors.parameters.items()}
    else:
        stored = _stored_counts_from_headers(api, repo_id, revision, timeout)
    return _store(repo_id, str(info.id or repo_id), revision, config, arch, stored)


@contextmanager
def _translated_errors(repo_id: str) -> Iterator[None]:
    values = {"repo": repo_id}
    try:
        yield
    except GatedRepoError as error:
        raise HubError(
            "gated",
            _(
                "“%(repo)s” is a gated model: the Hugging Face Hub shares its files only after its "
                "licence is accepted, with an access token. Paste its config.json instead."
            )
            % values,
        ) from error
    except (RepositoryNotFoundError, RevisionNotFoundError) as error:
        raise HubError(
            "missing",
            _("No model “%(repo)s” on the Hugging Face Hub (or it is private).") % values,
        ) from error
    except RemoteEntryNotFoundError as error:
        raise HubError(
            "malformed",
            _(
                "“%(repo)s” on the Hugging Face Hub has no config.json, so its architecture is unknown."
            )
            % values,
        ) from error
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else 0
        if status in {401, 403}:
            raise HubError(
                "gated",
                _("The Hugging Face Hub refused access to “%(repo)s” (it needs an access token).")
                % values,
            ) from error
        raise _offline(repo_id) from error
    except (httpx2.HTTPError, OfflineModeIsEnabled, OSError) as error:
        raise _offline(repo_id) from error


def _offline(repo_id: str) -> HubError:
    return HubError(
        "offline",
        _(
            "The Hugging Face Hub could not be reached to look up “%(repo)s”. Try again later, "
            "or paste the model's config.json."
        )
        % {"repo": repo_id},
    )


def _fetch_config(
    api: HfApi, repo_id: str, revision: str, timeout: float, token: str | bool
) -> dict[str, Any]:
    """``config.json`` at the commit the model info named, in one request (no retries)."""
    url = hf_hub_url(repo_id, "config.json", revision=revision, endpoint=api.endpoint)
    response = get_session().get(url, headers=build_hf_headers(token=token), timeout=timeout)
    hf_raise_for_status(response)
    malformed = HubError(
        "malformed",
        _("The config.json of “%(repo)s” on the Hugging Face Hub is not a JSON object.")
        % {"repo": repo_id},
    )
    if len(response.content) > MAX_CONFIG_BYTES:
        raise malformed
    try:
        config = json.loads(response.content)
    except (ValueError, RecursionError) as error:
        raise malformed from error
    if not isinstance(config, dict):
        raise malformed
    return config


def _stored_counts_from_headers(
    api: HfApi, repo_id: str, revision: str, timeout: float
) -> dict[str, int]:
    """Tensor elements per dtype read from the safetensors headers (range requests), for a
    mirror that does not serve the Hub's summary. Empty when the repository has none."""
    try:
        try:
            single = api.parse_safetensors_file_metadata(
                repo_id, "model.safetensors", revision=revision, timeout=timeout
            )
            return {str(dtype): int(count) for dtype, count in single.parameter_count.items()}
        except RemoteEntryNotFoundError:
            pass
        url = hf_hub_url(
            repo_id, "model.safetensors.index.json", revision=revision, endpoint=api.endpoint
        )
        response = get_session().get(
            url, headers=build_hf_headers(token=api.token), timeout=timeout
        )
        hf_raise_for_status(response)
        shards = sorted(set(json.loads(response.content).get("weight_map", {}).values()))
        if not shards or len(shards) > MAX_SHARD_HEADERS:
            return {}
        counts: dict[str, int] = {}
        for shard in shards:
            metadata = api.parse_safetensors_file_metadata(
                repo_id, shard, revision=revision, timeout=timeout
            )
            for dtype, count in metadata.parameter_count.items():
                counts[dtype] = counts.get(dtype, 0) + count
        return counts
    except (
        HfHubHTTPError,
        httpx2.HTTPError,
        NotASafetensorsRepoError,
        SafetensorsParsingError,
        ValueError,
        AttributeError,
        OSError,
    ):
        return {}


def stored_weight_bytes(dtypes: Mapping[str, int]) -> int | None:
    """What the checkpoint's tensors occupy as stored: elements × bytes of their dtype."""
    return stored_bytes(dtypes)


def _quantization(config: Mapping[str, Any]) -> str:
    """The catalogue's pre-quantized format named by a config's ``quantization_config``."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return Quantization.NONE
    method = str(quant.get("quant_method") or "").lower()
    bits = quant.get("bits") or quant.get("w_bit")
    if method == "fp8":
        return Quantization.FP8
    if method == "mxfp4":
        return Quantization.MXFP4
    if method == "awq" and bits == 4:
        return Quantization.AWQ_INT4
    if method == "gptq" and bits == 4:
        return Quantization.GPTQ_INT4
    return Quantization.NONE


def _native_precision(config: Mapping[str, Any], quantization: str) -> str:
    if quantization:
        return quantization.split("-")[-1]
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype, dtype)[:20]


def _slug(repo_id: str) -> str:
    base = "hub-" + re.sub(r"[^a-z0-9.]+", "-", repo_id.lower()).strip("-.")
    if len(base) > 90 or ModelPreset.objects.filter(slug=base).exists():
        base = f"{base[:80]}-{hashlib.sha256(repo_id.encode()).hexdigest()[:8]}"
    return base


def _store(
    repo_id: str,
    canonical_id: str,
    revision: str,
    config: dict[str, Any],
    arch: Architecture,
    stored: dict[str, int],
) -> ModelPreset:
    quantization = _quantization(config)
    preset = ModelPreset(
        slug=_slug(canonical_id),
        display_name=canonical_id,
        family=str(config.get("model_type") or arch.model_type)[:100],
        hf_repo=canonical_id,
        config=config,
        native_precision=_native_precision(config, quantization),
        quantization=quantization,
        source=f"{hub_endpoint()}/{canonical_id} (config.json and safetensors metadata at commit {revision})",
        origin=PresetOrigin.HUB,
        reviewed=False,
        hub_revision=revision[:64],
        hub_params_total=sum(stored.values()) if stored else None,
        hub_dtypes=stored,
        imported_at=timezone.now(),
    )
    try:
        with transaction.atomic():
            preset.save()
            for alias in dict.fromkeys([canonical_id, repo_id]):
                ModelAlias.objects.create(preset=preset, alias=alias)
    except IntegrityError:
        # Another request stored the same repository a moment ago.
        existing = hub_cached_preset(repo_id=repo_id)
        if existing is None:
            raise
        return existing
    return preset

"""Models named by their Hugging Face Hub repository id, fetched once and kept as imported presets.

``hub_model_import(repo_id=...)`` returns the preset for a repository: the row a previous look-up
stored (under the typed id or, for a renamed repository, the Hub's current id), or a new one built
from the repository's ``config.json`` and the Hub's safetensors metadata (exact tensor-element
count per stored dtype). New rows are marked imported and not reviewed: they answer their own
repository id only, until an admin promotes them to the catalogue.

Requests go through ``huggingface_hub``'s HTTP client to ``HF_ENDPOINT`` (default
https://huggingface.co, or a mirror) with ``HF_TOKEN`` when set, both read when a look-up runs.
What the Hub answers is not trusted: one deadline covers every request of a look-up
(``settings.HUB_DEADLINE_SECONDS``, well under the worker timeout), each request is also bounded
by ``settings.HUB_TIMEOUT_SECONDS`` and never retried, bodies are streamed and cut off at a cap,
redirects are followed ``MAX_REDIRECTS`` times at most, the token goes to the endpoint's own
origin only, and a document the database could not keep (NUL characters, integers beyond 64
bits, deep nesting) is refused before anything is stored. Every failure becomes a ``HubError``
whose ``kind`` says what went wrong and whose message is translated.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx2
from django.conf import settings
from django.db import DataError, IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from huggingface_hub import get_session, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, validate_repo_id

from calculator.catalogue.models import ModelAlias, ModelPreset, PresetOrigin, Quantization
from calculator.estimator import Architecture, ConfigError
from calculator.estimator.checkpoint import stored_bytes

DEFAULT_ENDPOINT = "https://huggingface.co"
HUB_HOSTS = frozenset({"huggingface.co", "www.huggingface.co", "hf.co"})
MAX_CONFIG_BYTES = 1 << 20  # also the cap on model.safetensors.index.json and the model info
# A safetensors header is read as huggingface_hub reads it: the file's first 100,000 bytes (most
# headers fit), then, when longer, the whole header, up to this size.
FIRST_HEADER_BYTES = 100_001
MAX_HEADER_BYTES = 8 << 20
# Past this many shards a mirror without the Hub's safetensors summary is not asked for headers.
MAX_SHARD_HEADERS = 16
# A renamed repository, then a file on the CDN: two are needed; httpx's default is 20.
MAX_REDIRECTS = 5
# The deepest of the catalogue's 297 published configs nests 7 levels (Kimi K2.5: text config,
# quantization_config groups).
MAX_CONFIG_DEPTH = 20
# What the database keeps: BigIntegerField (parameter counts, and integers in jsonb
# comparisons) and PositiveIntegerField (layers, KV heads, context length) on PostgreSQL.
INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_DTYPE = re.compile(r"[A-Za-z0-9_]{1,32}")
_SHARD = re.compile(r"[\w.-]{1,200}\.safetensors")
# What Architecture.from_hf_config may raise for a config it cannot read, whatever the field.
_UNUSABLE = (ArithmeticError, LookupError, RecursionError, TypeError, ValueError, AttributeError)

HubErrorKind = Literal[
    "invalid", "offline", "gated", "missing", "malformed", "withdrawn", "limited", "unavailable"
]
# Called before a look-up fetches anything: raises ``HubError("limited")`` (or "unavailable")
# when the client may not start another import now (views.hub_import_allowed).
BeforeFetch = Callable[[], None]


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
    """The preset already stored for this repository (imported or curated), active first: by
    its Hub id, or by an alias (an import keeps the id it was typed as, which differs from the
    Hub's for a renamed repository).

    An inactive one means an admin withdrew the model: ``HubError("withdrawn")``, no fetch.
    """
    aliased = ModelAlias.objects.filter(alias__iexact=repo_id).values("preset_id")
    preset = (
        ModelPreset.objects.filter(Q(hf_repo__iexact=repo_id) | Q(pk__in=aliased))
        .order_by("-active", "-reviewed", "pk")
        .first()
    )
    if preset is not None and not preset.active:
        raise HubError(
            "withdrawn",
            _("“%(repo)s” has been withdrawn from this calculator.") % {"repo": repo_id},
        )
    return preset


def hub_resolve(
    *,
    text: str,
    catalogue: Callable[[str], ModelPreset | None],
    before_fetch: BeforeFetch | None = None,
) -> ModelPreset | None:
    """The preset a typed repository id or Hub URL names; None when the text is not one.

    The catalogue answers first (``org/name`` as an alias, so a URL of a catalogue model needs
    no request), then a stored import, then the Hub.
    """
    repo_id = hub_repo_id(text)
    if repo_id is None:
        return None
    return catalogue(repo_id) or hub_model_import(repo_id=repo_id, before_fetch=before_fetch)


def hub_preset(
    *,
    text: str,
    catalogue: Callable[[str], ModelPreset | None],
    before_fetch: BeforeFetch | None = None,
) -> ModelPreset:
    """``hub_resolve`` for an explicit ``{"hub": ...}`` (API, CLI): anything else is invalid."""
    preset = hub_resolve(text=text, catalogue=catalogue, before_fetch=before_fetch)
    if preset is None:
        raise HubError("invalid", _invalid_message(text))
    return preset


def hub_model_import(*, repo_id: str, before_fetch: BeforeFetch | None = None) -> ModelPreset:
    """The preset for a Hub repository: stored before, or fetched now and stored as an import.

    Raises ``HubError`` when the Hub cannot be reached or does not answer in time, the
    repository is gated, private or missing, or its ``config.json`` or metadata is absent,
    unusable or more than the database can keep, and when ``before_fetch`` refuses or
    ``HUB_IMPORT_MAX_UNREVIEWED`` unreviewed imports are kept already (``"limited"``).
    """
    cached = hub_cached_preset(repo_id=repo_id)
    if cached is not None:
        return cached
    unreviewed = ModelPreset.objects.filter(origin=PresetOrigin.HUB, reviewed=False)
    if unreviewed.count() >= settings.HUB_IMPORT_MAX_UNREVIEWED:
        raise HubError(
            "limited",
            _(
                "“%(repo)s” is not in this calculator yet, and it keeps no more imports from the "
                "Hugging Face Hub until an administrator reviews some. Paste its config.json "
                "instead."
            )
            % {"repo": repo_id},
        )
    if before_fetch is not None:
        before_fetch()
    lookup = _Lookup(repo_id)
    with _translated_errors(repo_id):
        canonical_id, revision, stored = _model_info(lookup)
        if canonical_id.lower() != repo_id.lower():
            # Renamed: the Hub answers for the current id, which may be stored (or withdrawn).
            known = hub_cached_preset(repo_id=canonical_id)
            if known is not None:
                return known
        config = _fetch_config(lookup, revision)
        arch = _architecture(repo_id, config)
        if stored is None:
            stored = _stored_counts_from_headers(lookup, revision)
    if sum(stored.values()) > INT64_MAX:
        raise HubError(
            "malformed",
            _(
                "The Hugging Face Hub reports more stored tensor elements for “%(repo)s” than "
                "this calculator can keep."
            )
            % {"repo": repo_id},
        )
    return _store(repo_id, canonical_id, revision, config, arch, stored)


class _TooSlow(Exception):
    """The look-up's deadline passed, or one request timed out."""


class _TooLarge(Exception):
    """A body longer than its cap."""


class _Unparsable(Exception):
    """A safetensors header that says nothing usable."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = httpx2.URL(url)
    return parsed.scheme, parsed.host, parsed.port


class _Lookup:
    """The requests of one look-up: a deadline for all of them together, bounded bodies, bounded
    redirects, and the token sent only to the endpoint's own origin (never to a CDN or another
    host a redirect names)."""

    def __init__(self, repo_id: str) -> None:
        self.repo_id = repo_id
        self.endpoint = hub_endpoint()
        self.origin = _origin(self.endpoint)
        self.token: str | bool = os.environ.get("HF_TOKEN") or False
        self.timeout = float(settings.HUB_TIMEOUT_SECONDS)
        self.deadline = time.monotonic() + float(settings.HUB_DEADLINE_SECONDS)

    def get(
        self,
        url: str,
        *,
        limit: int,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        prefix: bool = False,
    ) -> bytes:
        """The body of ``GET url``: past ``limit`` bytes ``_TooLarge``, or with ``prefix`` its
        first ``limit`` bytes. Error statuses raise as ``hf_raise_for_status`` names them."""
        client = get_session()
        for _hop in range(MAX_REDIRECTS + 1):
            sent = {**build_hf_headers(token=self.token), **(headers or {})}
            sent["accept-encoding"] = "identity"  # what is counted is what is read
            if _origin(url) != self.origin:
                sent.pop("authorization", None)
            request = client.build_request(
                "GET", url, params=params, headers=sent, timeout=self._timeout()
            )
            try:
                response = client.send(request, stream=True, follow_redirects=False)
            except httpx2.TimeoutException as error:
                raise _TooSlow from error
            with closing(response):
                if response.has_redirect_location:
                    # The Location carries its own query.
                    url, params = str(response.url.join(response.headers["Location"])), None
                    continue
                if response.is_error:
                    hf_raise_for_status(_without_body(response))
                return self._read(response, limit, prefix)
        raise httpx2.TooManyRedirects(f"More than {MAX_REDIRECTS} redirects from {url}")

    def _timeout(self) -> httpx2.Timeout:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _TooSlow
        return httpx2.Timeout(min(self.timeout, remaining))

    def _read(self, response: httpx2.Response, limit: int, prefix: bool) -> bytes:
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            raise httpx2.DecodingError("A compressed answer, although identity was asked for.")
        length = response.headers.get("content-length", "")
        if not prefix and length.isdigit() and int(length) > limit:
            raise _TooLarge
        body = bytearray()
        try:
            # Each read waits at most the time that was left when the request was sent (its
            # timeout); a body that trickles is cut off at the first chunk past the deadline.
            for chunk in response.iter_raw():
                if time.monotonic() > self.deadline:
                    raise _TooSlow
                body += chunk
                if len(body) > limit:
                    if prefix:
                        return bytes(body[:limit])
                    raise _TooLarge
        except httpx2.TimeoutException as error:
            raise _TooSlow from error
        return bytes(body)


def _without_body(response: httpx2.Response) -> httpx2.Response:
    """An error answer without its body (of any size, and read by nobody) for
    ``hf_raise_for_status``, which tells the Hub's errors apart by status and headers."""
    skipped = {"content-length", "content-encoding", "transfer-encoding"}
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in skipped]
    return httpx2.Response(response.status_code, headers=headers, request=response.request)


@contextmanager
def _translated_errors(repo_id: str) -> Iterator[None]:
    values = {"repo": repo_id}
    try:
        yield
    except _TooSlow as error:
        raise HubError(
            "offline",
            _(
                "The Hugging Face Hub did not answer in time to look up “%(repo)s”. Try again "
                "later, or paste the model's config.json."
            )
            % values,
        ) from error
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
    except (httpx2.HTTPError, httpx2.InvalidURL, OfflineModeIsEnabled, OSError) as error:
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


def _model_info(lookup: _Lookup) -> tuple[str, str, dict[str, int] | None]:
    """The repository's id on the Hub, its commit, and the Hub's safetensors summary (None
    without one): ``GET /api/models/{id}?expand=sha&expand=safetensors``, as
    ``HfApi.model_info`` asks for it."""
    url = f"{lookup.endpoint}/api/models/{lookup.repo_id}"
    params = {"expand": ["sha", "safetensors"]}
    unusable = HubError(
        "malformed",
        _("The Hugging Face Hub answered with unusable model information for “%(repo)s”.")
        % {"repo": lookup.repo_id},
    )
    try:
        info = _json_object(lookup.get(url, limit=MAX_CONFIG_BYTES, params=params))
    except _TooLarge as error:
        raise unusable from error
    if info is None:
        raise unusable
    # A mirror may leave out the id; the Hub's own is the current one of a renamed repository.
    canonical_id = info.get("id") or lookup.repo_id
    revision = info.get("sha") or "main"
    try:
        validate_repo_id(canonical_id)  # also bounds it: 96 characters on each side of the "/"
    except HFValidationError as error:
        raise unusable from error
    if revision != "main" and not (isinstance(revision, str) and _COMMIT.fullmatch(revision)):
        raise unusable
    summary = info.get("safetensors")
    if summary is None:
        return canonical_id, revision, None
    stored = _counts(summary.get("parameters") if isinstance(summary, dict) else None)
    if stored is None:
        raise unusable
    return canonical_id, revision, stored


def _counts(value: object) -> dict[str, int] | None:
    """Tensor elements per dtype, when ``value`` is such a mapping; None otherwise."""
    if not isinstance(value, dict):
        return None
    counts: dict[str, int] = {}
    for dtype, count in value.items():
        if not (isinstance(dtype, str) and _DTYPE.fullmatch(dtype)):
            return None
        if type(count) is not int or count < 0:
            return None
        counts[dtype] = count
    return counts


def _json_object(text: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def _fetch_config(lookup: _Lookup, revision: str) -> dict[str, Any]:
    """``config.json`` at the commit the model info named, at most ``MAX_CONFIG_BYTES``."""
    url = hf_hub_url(lookup.repo_id, "config.json", revision=revision, endpoint=lookup.endpoint)
    values = {"repo": lookup.repo_id}
    try:
        text = lookup.get(url, limit=MAX_CONFIG_BYTES)
    except _TooLarge as error:
        raise HubError(
            "malformed",
            _("The config.json of “%(repo)s” on the Hugging Face Hub is larger than 1 MiB.")
            % values,
        ) from error
    config = _json_object(text)
    if config is None:
        raise HubError(
            "malformed",
            _("The config.json of “%(repo)s” on the Hugging Face Hub is not a JSON object.")
            % values,
        )
    return config


def _check_document(document: Any) -> str | None:
    """Why a JSON document cannot be stored as it is, or None: nested deeper than
    ``MAX_CONFIG_DEPTH`` (the top object is level 1), a NUL character in a string or key
    (PostgreSQL's jsonb refuses it), an integer beyond 64 bits."""
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict | list):
            if depth > MAX_CONFIG_DEPTH:
                return _("it is nested deeper than %(levels)d levels") % {
                    "levels": MAX_CONFIG_DEPTH
                }
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and "\x00" in key:
                    return str(_("it contains a NUL character"))
                pending.append((item, depth + 1))
        elif isinstance(value, str) and "\x00" in value:
            return str(_("it contains a NUL character"))
        elif isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
            return str(_("it holds an integer outside the 64-bit range"))
    return None


def _architecture(repo_id: str, config: dict[str, Any]) -> Architecture:
    """The estimator's reading of a config.json the database can keep, or ``HubError``."""
    reason: object = _check_document(config)
    if reason is None:
        try:
            arch = Architecture.from_hf_config(config)
            sizes = (arch.num_layers, arch.num_kv_heads, arch.max_position_embeddings or 0)
            if arch.params_total <= INT64_MAX and max(sizes) <= INT32_MAX:
                return arch
            reason = str(_("its sizes are beyond what this calculator can store"))
        except (ConfigError, *_UNUSABLE) as error:
            reason = error
    raise HubError(
        "malformed",
        _("The config.json of “%(repo)s” cannot be used: %(reason)s")
        % {"repo": repo_id, "reason": reason},
    )


def _stored_counts_from_headers(lookup: _Lookup, revision: str) -> dict[str, int]:
    """Tensor elements per dtype read from the safetensors headers (range requests), for a
    mirror that does not serve the Hub's summary. Empty when the repository has none, or when
    they cannot be read; a look-up past its deadline fails (``_TooSlow``)."""
    try:
        try:
            return _header_counts(lookup, revision, "model.safetensors")
        except RemoteEntryNotFoundError:
            pass
        url = hf_hub_url(
            lookup.repo_id,
            "model.safetensors.index.json",
            revision=revision,
            endpoint=lookup.endpoint,
        )
        index = _json_object(lookup.get(url, limit=MAX_CONFIG_BYTES)) or {}
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict):
            return {}
        shards = sorted({str(name) for name in weight_map.values()})
        if not shards or len(shards) > MAX_SHARD_HEADERS:
            return {}
        if not all(_SHARD.fullmatch(shard) for shard in shards):
            return {}
        counts: dict[str, int] = {}
        for shard in shards:
            for dtype, count in _header_counts(lookup, revision, shard).items():
                counts[dtype] = counts.get(dtype, 0) + count
        return counts
    except (HfHubHTTPError, httpx2.HTTPError, httpx2.InvalidURL, _TooLarge, _Unparsable, OSError):
        return {}


def _header_counts(lookup: _Lookup, revision: str, filename: str) -> dict[str, int]:
    """Tensor elements per dtype in one safetensors file's header (the format: an 8-byte
    little-endian length, then that many bytes of JSON giving each tensor's dtype and shape).
    A count beyond 64 bits is kept as ``INT64_MAX + 1``, for the caller to refuse."""
    url = hf_hub_url(lookup.repo_id, filename, revision=revision, endpoint=lookup.endpoint)
    first = {"range": f"bytes=0-{FIRST_HEADER_BYTES - 1}"}
    head = lookup.get(url, limit=FIRST_HEADER_BYTES, headers=first, prefix=True)
    size = int.from_bytes(head[:8], "little")
    if len(head) < 8 or size > MAX_HEADER_BYTES:
        raise _Unparsable
    if len(head) < 8 + size:
        # From byte 0 again, so that a server ignoring ranges still gives the right bytes.
        whole = {"range": f"bytes=0-{size + 7}"}
        head = lookup.get(url, limit=size + 8, headers=whole, prefix=True)
    header = _json_object(head[8 : 8 + size])
    if header is None:
        raise _Unparsable
    counts: dict[str, int] = {}
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        dtype = tensor.get("dtype") if isinstance(tensor, dict) else None
        shape = tensor.get("shape") if isinstance(tensor, dict) else None
        if not (isinstance(dtype, str) and _DTYPE.fullmatch(dtype) and isinstance(shape, list)):
            raise _Unparsable
        elements = 1
        for dim in shape:
            if type(dim) is not int or dim < 0:
                raise _Unparsable
            elements = min(elements * dim, INT64_MAX + 1)
        counts[dtype] = min(counts.get(dtype, 0) + elements, INT64_MAX + 1)
    return counts


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


def _slug(canonical_id: str, repo_id: str) -> str:
    """A slug no preset has: the Hub id's, else with a digest of both ids (a renamed repository
    typed under several names), else with a random suffix (an admin removed aliases)."""
    base = "hub-" + re.sub(r"[^a-z0-9.]+", "-", canonical_id.lower()).strip("-.")
    digest = hashlib.sha256(f"{canonical_id}\n{repo_id}".lower().encode()).hexdigest()[:8]
    candidates = [base] if len(base) <= 90 else []
    candidates.append(f"{base[:80]}-{digest}")
    taken = set(ModelPreset.objects.filter(slug__in=candidates).values_list("slug", flat=True))
    free = [slug for slug in candidates if slug not in taken]
    return free[0] if free else f"{base[:80]}-{secrets.token_hex(4)}"


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
        slug=_slug(canonical_id, repo_id),
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
    unstorable = HubError(
        "malformed",
        _(
            "“%(repo)s” from the Hugging Face Hub cannot be stored: the database refuses its "
            "config.json or metadata."
        )
        % {"repo": repo_id},
    )
    try:
        # Both ids are aliases: the next look-up of either finds this row without a request.
        with transaction.atomic():
            preset.save()
            for alias in dict.fromkeys([canonical_id, repo_id]):
                ModelAlias.objects.create(preset=preset, alias=alias)
    except IntegrityError as error:
        # Another request stored the same repository a moment ago.
        existing = hub_cached_preset(repo_id=repo_id)
        if existing is None:
            raise unstorable from error
        return existing
    except (DataError, OverflowError, ValueError) as error:
        # Whatever the checks above missed, refused by this database (the save is undone).
        raise unstorable from error
    return preset

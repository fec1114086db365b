"""The shared cache of rendered pages: an optimisation, never a dependency.

A page is cached under what it was computed from, never under the raw request: the language,
whether it is the htmx fragment, the path, the scheme and host its absolute links are built on,
the catalogue version, and the request's inputs as the form reads them (keys it does not read
are dropped, so ``?z=<random>`` finds the same entry, and a ``Host`` header cannot put another
site's links into someone else's page).

When the cache's store fails (Redis down or paused past ``DJANGO_REDIS_TIMEOUT_SECONDS``, the
cache table unreachable), pages are served without it, and this process leaves the store alone
for ``RETRY_SECONDS`` so that an outage costs one timeout per worker and interval, not one per
request; it is asked again afterwards, so the cache comes back by itself.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest
from django.utils.translation import get_language

RETRY_SECONDS = 10.0
logger = logging.getLogger(__name__)
_unavailable_until = 0.0


def page_cache_key(
    request: HttpRequest,
    *,
    inputs: Iterable[tuple[str, list[str]]],
    partial: bool,
    version: str,
) -> str:
    """The key of a rendered page: everything its bytes depend on, nothing else."""
    parts = [
        get_language() or "",
        "fragment" if partial else "page",
        request.path,
        request.scheme or "",
        request.get_host(),
        version,
    ]
    for name, values in sorted(inputs):
        parts.append(name + "=" + "\x1f".join(values))
    digest = hashlib.sha256("\x1e".join(parts).encode()).hexdigest()
    return "page:" + digest


def _available() -> bool:
    return time.monotonic() >= _unavailable_until


def _failed(operation: str, error: Exception) -> None:
    global _unavailable_until
    _unavailable_until = time.monotonic() + RETRY_SECONDS
    logger.warning(
        "page cache %s failed (%s: %s); serving without it for %ss",
        operation,
        type(error).__name__,
        error,
        RETRY_SECONDS,
    )


def page_cache_get(key: str) -> Any:
    """The cached value, or None when absent or the store does not answer."""
    if not _available():
        return None
    try:
        return cache.get(key)
    except Exception as error:  # any backend's failure: Redis, database, network
        _failed("read", error)
        return None


def page_cache_set(key: str, value: Any, seconds: int) -> None:
    if not _available():
        return
    try:
        cache.set(key, value, seconds)
    except Exception as error:
        _failed("write", error)

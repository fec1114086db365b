"""Form posts past the upload limit: a message next to the field that was too long, not a bare
"Bad Request (400)" that loses everything else typed."""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO
from urllib.parse import unquote_plus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.defaultfilters import filesizeformat

FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
# A post is read for its small fields up to this many times the limit (4 MiB by default), in
# chunks: never more than about twice the limit is held in memory. Past it, a clear page.
READ_FACTOR = 8
CHUNK_BYTES = 64 * 1024


def oversize_fields(request: HttpRequest) -> dict[str, int]:
    """The fields of this post left out for their size: name → their size in bytes (about:
    counted as sent, each %XX escape as one byte)."""
    return getattr(request, "_oversize_fields", {})


def limit_text() -> str:
    """The upload limit as people read it ("512.0 KB"), in the active language."""
    return str(filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))


class OversizeFormMiddleware:
    """Keeps a form post over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` usable.

    Django refuses such a post as a whole when anything reads ``request.POST`` (the CSRF check
    does, before any view): a bare 400 page, everything typed lost, no word of a limit. A
    urlencoded post (every admin change form, the calculator's pasted config) is read here
    instead, in chunks, up to ``READ_FACTOR`` times the limit: each value larger than the limit
    is left out, and so are the largest others until the rest fits; those left out are named
    in ``oversize_fields(request)``, and the rest is the body Django parses. The forms then
    come back with what was typed and a message next to the field that was too long. A post
    that cannot be read so (longer than that, or a multipart one whose fields are too large)
    gets a page that says what happened and the limit. Other bodies (the API's JSON) are left
    to their views.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if request.method == "POST" and limit is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit and request.content_type == FORM:
                if length > READ_FACTOR * limit:
                    return too_large_page(request, length)
                _keep_small_fields(request, length, limit)
            elif length > limit and request.content_type == MULTIPART:
                # Uploaded files do not count against the limit, only the other fields do.
                try:
                    request.POST  # noqa: B018 (parsed now, as the CSRF check would)
                except RequestDataTooBig:
                    return too_large_page(request, length)
        return self.get_response(request)


def too_large_page(request: HttpRequest, length: int) -> HttpResponse:
    context = {"size": filesizeformat(length), "limit": limit_text()}
    return render(request, "calculator/too_large.html", context, status=413)


def _keep_small_fields(request: HttpRequest, length: int, limit: int) -> None:
    kept: list[bytes] = []
    dropped: dict[str, int] = {}
    current = bytearray()
    sizes = {"bytes": 0, "escapes": 0, "kept": 0}

    def finish() -> None:
        if sizes["bytes"] > limit:
            name = bytes(current).split(b"=", 1)[0]
            dropped[_name(name)] = sizes["bytes"] - 2 * sizes["escapes"] - len(name) - 1
        elif sizes["bytes"]:
            kept.append(bytes(current))
            sizes["kept"] += len(current) + 1
            while sizes["kept"] > limit:
                largest = max(kept, key=len)
                kept.remove(largest)
                sizes["kept"] -= len(largest) + 1
                name = largest.split(b"=", 1)[0]
                dropped[_name(name)] = len(largest) - 2 * largest.count(b"%") - len(name) - 1
        current.clear()
        sizes["bytes"] = sizes["escapes"] = 0

    remaining = length
    while remaining > 0:
        chunk = request.read(min(CHUNK_BYTES, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        for index, part in enumerate(chunk.split(b"&")):
            if index:
                finish()
            sizes["bytes"] += len(part)
            sizes["escapes"] += part.count(b"%")
            if len(current) <= limit:
                current.extend(part[: limit + 1 - len(current)])
    finish()
    body = b"&".join(kept)
    request._body = body
    request._stream = BytesIO(body)
    request.META["CONTENT_LENGTH"] = str(len(body))
    request._oversize_fields = dropped  # type: ignore[attr-defined]


def _name(encoded: bytes) -> str:
    return unquote_plus(encoded.decode("latin-1"), encoding="utf-8", errors="replace")

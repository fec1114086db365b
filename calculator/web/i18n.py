"""Language in the URL, a switcher that keeps the inputs, and Accept-Language on first visit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import (
    get_language_from_request,
    get_supported_language_variant,
)
from django.views.decorators.http import require_GET


def _on_this_site(target: str) -> bool:
    """A path on this site: it starts with one slash, names no host or scheme, and no browser
    reads it as another host (``//evil``, ``/\\evil``, control characters)."""
    return (
        target.startswith("/")
        and not target.startswith(("//", "/\\"))
        and not any(ord(char) < 0x20 or ord(char) == 0x7F for char in target)
        and url_has_allowed_host_and_scheme(target, allowed_hosts=set())
    )


def language_redirect_target(next_path: str, language: str) -> str:
    """Where the switcher sends the visitor: ``next_path`` in ``language``, or that language's
    home page when ``next_path`` is not a path on this site, before or after the language
    prefix is changed (``/es//evil.example`` without ``/es`` is ``//evil.example``)."""
    home = localized_path("/", language)
    if not _on_this_site(next_path):
        return home
    target = localized_path(next_path, language)
    return target if _on_this_site(target) else home


@require_GET
def switch_language(request: HttpRequest, code: str) -> HttpResponse:
    """Remember the chosen language and open the same page, inputs included, in it."""
    try:
        language = get_supported_language_variant(code)
    except LookupError:
        language = settings.LANGUAGE_CODE
    target = language_redirect_target(request.GET.get("next") or "/", language)
    response = HttpResponseRedirect(target)
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=365 * 24 * 3600,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )
    return response


class FirstVisitLanguageMiddleware:
    """On a first visit to the bare landing page, follow the browser's Accept-Language.

    Only ``GET /`` without a query string and without a language cookie is redirected, so a
    shared permalink always opens exactly as it was shared.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.method == "GET"
            and request.path_info == "/"
            and not request.GET
            and settings.LANGUAGE_COOKIE_NAME not in request.COOKIES
            and "HTTP_ACCEPT_LANGUAGE" in request.META
        ):
            preferred = get_language_from_request(request)
            if preferred != settings.LANGUAGE_CODE:
                response: HttpResponse = HttpResponseRedirect(f"/{preferred}/")
                response["Vary"] = "Accept-Language, Cookie"
                return response
        response = self.get_response(request)
        return response


def _language_prefixes() -> tuple[str, ...]:
    return tuple(code for code, _name in settings.LANGUAGES if code != settings.LANGUAGE_CODE)


def neutral_path(path: str) -> str:
    """The path without its language prefix (English, the default, has none)."""
    for code in _language_prefixes():
        prefix = f"/{code}"
        if path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + "?"):
            rest = path[len(prefix) :]
            return rest if rest.startswith("/") else "/" + rest
    return path


def localized_path(path: str, language: str) -> str:
    """The same page, query included, in ``language``.

    A string operation on the prefix rather than Django's ``translate_url``: that one resolves
    the path in the *active* language, which on ``/lang/…`` is whatever the cookie says, so a
    ``/es/`` page could never be left for English.
    """
    neutral = neutral_path(path)
    return neutral if language == settings.LANGUAGE_CODE else f"/{language}{neutral}"


_NATIVE_NAMES: dict[str, str] = {}


def native_name(code: str, name: Any) -> str:
    """A language's name in itself ("Deutsch"), translated once per process: the switcher is on
    every page and every recompute, and activating eight languages per render is not free."""
    if code not in _NATIVE_NAMES:
        from django.utils import translation

        with translation.override(code):
            _NATIVE_NAMES[code] = str(name)
    return _NATIVE_NAMES[code]


class LanguageLink:
    """One language of the switcher: its name, the switch URL, and (computed only when a page
    asks, for its ``hreflang`` alternates) the absolute URL of this page in that language."""

    __slots__ = ("_current", "_request", "code", "name", "switch_url")

    def __init__(self, request: HttpRequest, current: str, quoted: str, code: str, name: Any):
        self._request = request
        self._current = current
        self.code = code
        self.name = native_name(code, name)
        self.switch_url = f"/lang/{code}?next={quoted}"

    @property
    def url(self) -> str:
        return self._request.build_absolute_uri(localized_path(self._current, self.code))


def language_links(request: HttpRequest) -> dict[str, Any]:
    """Context: every language with the URL of this page (and its inputs) in it.

    Language prefixes are plain path prefixes here (English has none), so the URL in another
    language is a string operation, not a URL resolution per language.
    """
    # After a POST (a pasted config) the view records the permalink the page now shows.
    current = getattr(request, "permalink_path", None) or request.get_full_path()
    quoted = _quote(current)
    links = [
        LanguageLink(request, current, quoted, code, name) for code, name in settings.LANGUAGES
    ]
    return {"language_links": links}


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")

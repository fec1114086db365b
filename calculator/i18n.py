"""Language in the URL, a switcher that keeps the inputs, and Accept-Language on first visit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import translate_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import (
    get_language,
    get_language_from_request,
    get_supported_language_variant,
)
from django.views.decorators.http import require_GET


def _safe_next(request: HttpRequest) -> str:
    target = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return "/"
    return target


@require_GET
def switch_language(request: HttpRequest, code: str) -> HttpResponse:
    """Remember the chosen language and open the same page, inputs included, in it."""
    try:
        language = get_supported_language_variant(code)
    except LookupError:
        language = settings.LANGUAGE_CODE
    response = HttpResponseRedirect(translate_url(_safe_next(request), language))
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


def language_links(request: HttpRequest) -> dict[str, Any]:
    """Context: every language with the URL of this page (and its inputs) in it.

    Language prefixes are plain path prefixes here (English has none), so the URL in another
    language is a string operation, not a URL resolution per language.
    """
    current = request.get_full_path()
    active = get_language()
    path = current
    if active and active != settings.LANGUAGE_CODE and current.startswith(f"/{active}/"):
        path = current[len(active) + 1 :]
    links = []
    for code, name in settings.LANGUAGES:
        localized = path if code == settings.LANGUAGE_CODE else f"/{code}{path}"
        links.append(
            {
                "code": code,
                "name": name,
                "switch_url": f"/lang/{code}?next={_quote(current)}",
                "url": request.build_absolute_uri(localized),
            }
        )
    return {"language_links": links}


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")

"""The Jinja2 environment for the result fragment, the part of the page every recompute renders.

Jinja2 compiles a template to Python, so the fragment renders several times faster than through
the Django template language (issue 16: rendering was over half of a never-seen recompute). Both
answers of a recompute are Jinja2: the first view (_result.jinja) and the advice, GPU list and
charts it loads next (_more.jinja). The rest of the site stays in Django templates; `{% jinja %}`
(calculator_format) embeds a fragment.

Translation keeps Django's semantics, so one catalogue serves both engines: ``_("text")`` is
``{% translate "text" %}`` (the translation is escaped like any value), and
``bt("text %(n)s", n=value)`` is ``{% blocktranslate with n=value %}text {{ n }}…`` (the
translation is trusted markup, the values are escaped, a literal % is written %%). The
``makemessages`` command of this project extracts both from ``.jinja`` files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.http import QueryDict
from django.urls import get_script_prefix, reverse
from jinja2 import ChainableUndefined, Environment, pass_context
from jinja2.runtime import Context
from markupsafe import Markup

from calculator.inputs import l10n
from calculator.result import formatting as fmt

if TYPE_CHECKING:
    from calculator.result.calculation import ApiRoute


def per_request(function: Callable[..., str]) -> Callable[..., str]:
    """A filter Jinja2 never runs at compile time. It folds a filter applied to a constant
    (``{{ 100|percent }}``) when it compiles the template, in whatever language was active then;
    a filter that takes the context is left to each render."""

    @pass_context
    def in_render(context: Context, value: Any, *args: Any) -> str:
        return function(value, *args)

    return in_render


# Filters and functions the fragments use, the same callables the Django templates use; their
# output depends on the language, so none is folded.
FILTERS = {
    name: per_request(getattr(fmt, name))
    for name in (
        "gb",
        "gib",
        "billions",
        "num",
        "percent",
        "duration",
        "phase_label",
        "stack_label",
        "switches_summary",
        "assumption_text",
        "source_text",
    )
}


def translate(message: str) -> str:
    """``{% translate "text" %}``: its catalogue key has every % doubled, as Django writes it."""
    if "%" not in message:
        return l10n.gettext_memo(message)
    return l10n.gettext_memo(message.replace("%", "%%")).replace("%%", "%")


def blocktranslate(message: str, **values: Any) -> Markup:
    """``{% blocktranslate %}``: the translated text with the (escaped) values filled in."""
    return Markup(l10n.gettext_memo(message)) % values


_URLS: dict[tuple[Any, ...], str] = {}


def url(name: str, *args: Any) -> str:
    # Resolved once per language, script prefix and arguments: reversing was a twentieth of the
    # fragment's rendering. A saved result's id is an argument, so the memo is bounded.
    key = (l10n.active_language(), get_script_prefix(), name, *args)
    found = _URLS.get(key)
    if found is None:
        if len(_URLS) > 1000:
            _URLS.clear()
        found = _URLS[key] = reverse(name, args=args)
    return found


@pass_context
def api_route(context: Context, calculation: Any, query: QueryDict) -> ApiRoute | None:
    """The API request, GET address and CLI command of a result (``Calculation.api_route``).

    The address is absolute, built from the request's scheme and host, so that the curl runs as
    copied. That is safe in a cached fragment: the page cache keys every page by the scheme and
    host its absolute links are built on (calculator.web.page_cache), so a forged ``Host`` header
    that ``ALLOWED_HOSTS`` lets through gets an entry of its own and never reaches another
    visitor's page; a saved result's page is not cached at all."""
    request = context.get("request")
    if not calculation or request is None:
        return None
    estimate_url = request.build_absolute_uri(url("api:estimate_post"))
    linked: str | None = fmt.urlencoded(query) if query else ""
    if query and query.get("source") == "config" and not (query.get("cfg") or query.get("config")):
        linked = None  # a pasted config neither stored nor short enough to link
    route: ApiRoute = calculation.api_route(estimate_url=estimate_url, query=linked)
    return route


def api_route_slot(query: QueryDict | None) -> str:
    """The id of the place a recompute's first view leaves for the API route, which the part
    loaded next fills out of band. It names the inputs: the answer to an older request, arriving
    after a newer first view replaced the result, finds no slot of its name and is dropped."""
    text = fmt.urlencoded(query) if query else ""
    return "api-route-" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def environment(**options: Any) -> Environment:
    # Like the Django template language, a missing value or attribute renders as nothing.
    options["undefined"] = ChainableUndefined
    env = Environment(**options)
    env.filters.update(FILTERS)
    env.filters["unlocalize"] = str
    env.globals.update(
        _=translate,
        bt=blocktranslate,
        url=url,
        query_with=fmt.query_with,
        urlencoded=fmt.urlencoded,
        api_route=api_route,
        api_route_slot=api_route_slot,
    )
    return env

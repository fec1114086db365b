"""The request's language, looked up once, and the figures and texts formatted in it.

A recompute formats about fifty figures and translates dozens of texts (issue 16). Django finds
the active language through a thread-local on every call and ``number_format`` goes through
``Decimal`` for every figure; the helpers here do each lookup once per language or per
fragment. The template filters (``templatetags/calculator_format``), the Jinja2 fragments
(``config/jinja2``) and the presenters all format through them, so the page, the exports and
the API write every figure the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.utils.formats import get_format
from django.utils.translation import get_language, pgettext_lazy, trans_real


def decimal(value: float, places: int) -> str:
    """A number rounded half-up to ``places`` decimals, grouped by thousands, in the active
    locale's separators.

    Django's ``number_format`` cuts extra decimals off (181.699 → "181.69"); every figure on
    the page, in the exports and in the API rounds (→ "181.70"), so they agree. Formatting runs
    dozens of times per page, so the separators are looked up once per language.
    """
    if places == 0 and isinstance(value, int):
        text = f"{value:,}"  # exact, however large
    else:
        step = _STEPS.get(places) or _STEPS.setdefault(places, Decimal(1).scaleb(-places))
        rounded = Decimal(repr(float(value))).quantize(step, rounding=ROUND_HALF_UP)
        text = f"{rounded:,f}"
    decimal_separator, thousand_separator = _separators()
    if decimal_separator == "." and thousand_separator == ",":
        return text
    return text.replace(",", "\0").replace(".", decimal_separator).replace("\0", thousand_separator)


_STEPS: dict[int, Decimal] = {}
_SEPARATORS: dict[str, tuple[str, str]] = {}

# The language of the fragment being rendered, set by `fragment_language`: a fragment formats about
# fifty figures, and asking Django for the active language each time (a thread-local lookup)
# was a tenth of the recompute's rendering.
RENDER_LANGUAGE: ContextVar[str | None] = ContextVar("render_language", default=None)


def active_language() -> str:
    return RENDER_LANGUAGE.get() or get_language() or "en"


def gettext_memo(message: str) -> str:
    """Django's gettext in the active language, memoised per catalogue: Django finds the active
    language through a thread-local on every call, and a recompute translates dozens of texts.
    The memo lives on the catalogue object, so a reloaded catalogue starts a new one."""
    catalogue = trans_real.translation(active_language())
    memo: dict[str, str] = catalogue.__dict__.setdefault("fragment_memo", {})
    text = memo.get(message)
    if text is None:
        text = memo[message] = str(catalogue.gettext(message))
    return text


_LABELS: dict[tuple[str, int], tuple[Any, dict[Any, str]]] = {}


def labels(choices: Mapping[Any, Any] | Sequence[tuple[Any, Any]]) -> dict[Any, str]:
    """The translated labels of a module-level choice list or mapping (lazy texts), made once
    per language. Keyed by the object's identity, so only for objects that live as long as the
    process."""
    key = (active_language(), id(choices))
    entry = _LABELS.get(key)
    # The entry holds the object itself: an id is reused once its object is gone, and a
    # temporary list passed here once would otherwise lend its labels to a later object.
    if entry is None or entry[0] is not choices:
        pairs = choices.items() if isinstance(choices, Mapping) else choices
        entry = _LABELS[key] = (choices, {value: str(label) for value, label in pairs})
    return entry[1]


# Qualifiers some catalogue names end with (presets/*.json), written in English. The name stays
# what an admin typed, and lookups keep using it; the page shows the qualifier in its language.
NAME_QUALIFIERS = {
    # The H100 NVL is sold as a pair of cards; the catalogue row is one of the two.
    " (per GPU)": pgettext_lazy("catalogue name", "%(name)s (per GPU)"),
    # Gemma 3's multimodal checkpoints, counted without their vision tower.
    " (text part)": pgettext_lazy("catalogue name", "%(name)s (text part)"),
}


def catalogue_name(name: str) -> str:
    """A GPU's or a preset's name as the page shows it: a qualifier it ends with
    (``NAME_QUALIFIERS``) in the active language, the rest as stored."""
    for suffix, shown in NAME_QUALIFIERS.items():
        if name.endswith(suffix):
            return str(shown) % {"name": name[: -len(suffix)]}
    return name


def _separators() -> tuple[str, str]:
    language = active_language()
    if language not in _SEPARATORS:
        _SEPARATORS[language] = (
            str(get_format("DECIMAL_SEPARATOR", use_l10n=True)),
            str(get_format("THOUSAND_SEPARATOR", use_l10n=True)),
        )
    return _SEPARATORS[language]


@contextmanager
def fragment_language() -> Iterator[None]:
    """While a Jinja2 fragment renders (and while the calculator computes the result it shows),
    its figures and texts use the active language, looked up once (see RENDER_LANGUAGE)."""
    token = RENDER_LANGUAGE.set(get_language())
    try:
        yield
    finally:
        RENDER_LANGUAGE.reset(token)

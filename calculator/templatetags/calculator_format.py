"""Formatting at the edge: bytes become GiB/GB here and nowhere else."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import urlencode

from django import template
from django.forms import BoundField, Form
from django.http import QueryDict
from django.template import engines
from django.utils.formats import get_format, number_format
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, gettext, gettext_noop, trans_real
from django.utils.translation import gettext_lazy as _

register = template.Library()


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

# The language of the fragment being rendered, set by `{% jinja %}`: a fragment formats about
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


_LABELS: dict[tuple[str, int], dict[Any, str]] = {}


def labels(choices: Mapping[Any, Any] | Sequence[tuple[Any, Any]]) -> dict[Any, str]:
    """The translated labels of a module-level choice list or mapping (lazy texts), made once
    per language. Keyed by the object's identity, so only for objects that live as long as the
    process."""
    key = (active_language(), id(choices))
    found = _LABELS.get(key)
    if found is None:
        pairs = choices.items() if isinstance(choices, Mapping) else choices
        found = _LABELS[key] = {value: str(label) for value, label in pairs}
    return found


def _separators() -> tuple[str, str]:
    language = active_language()
    if language not in _SEPARATORS:
        _SEPARATORS[language] = (
            str(get_format("DECIMAL_SEPARATOR", use_l10n=True)),
            str(get_format("THOUSAND_SEPARATOR", use_l10n=True)),
        )
    return _SEPARATORS[language]


@register.filter
def gib(value: int) -> str:
    """Bytes as GiB (2³⁰), two decimals, in the active locale's number format."""
    return decimal(value / (1 << 30), 2)


@register.filter
def gb(value: int) -> str:
    """Bytes as GB (10⁹), two decimals, in the active locale's number format."""
    return decimal(value / 1e9, 2)


@register.filter
def billions(value: int) -> str:
    return decimal(value / 1e9, 2 if value < 1e11 else 1)


@register.filter
def num(value: float, places: int = 0) -> str:
    """Any figure (tokens, counts, GiB already divided) in the locale's format, rounded."""
    return decimal(value, int(places))


# Typography of a percentage: French, German and Spanish (RAE) put a (narrow no-break) space
# before the sign.
PERCENT_SPACED = {"fr", "de", "es"}


@register.filter
def percent(value: float, places: int = 0) -> str:
    """A percentage with the sign, as the active language writes it ("30.6%", "30,6 %")."""
    figure = decimal(value, int(places))
    language = active_language().split("-")[0]
    return f"{figure}\u202f%" if language in PERCENT_SPACED else f"{figure}%"


@register.filter
def field(form: Form, name: str) -> BoundField:
    return form[name]


def urlencoded(query: QueryDict) -> str:
    """``query.urlencode()``, in one call to urllib instead of one per value (QueryDict's own
    way, which was a tenth of the fragment's rendering)."""
    return urlencode(list(query.lists()), doseq=True)


@register.simple_tag
def query_with(query: QueryDict, **changes: Any) -> str:
    """The current query string with some values replaced (for lever and suggestion links): a
    replaced key keeps its place, a new one comes last (as ``QueryDict.__setitem__`` would)."""
    pairs: list[tuple[str, str]] = []
    for key, values in query.lists():
        if key in changes:
            pairs.append((key, str(changes[key])))
        else:
            pairs.extend((key, value) for value in values)
    pairs.extend((key, str(value)) for key, value in changes.items() if key not in query)
    return urlencode(pairs)


@register.simple_tag
def query_merge(query: QueryDict, changes: dict[str, Any]) -> str:
    """The current query string with a set of values replaced (one-click runtime defaults)."""
    return query_with(query, **changes)


@register.filter
def assumption_text(assumption: Any) -> str:
    """The estimator's English template, translated, with its values filled in (numbers in the
    locale's format, like every other figure on the page)."""
    params = {
        key: number_format(value, use_l10n=True, force_grouping=True)
        if isinstance(value, int) and not isinstance(value, bool)
        else (gettext(value) if isinstance(value, str) and value else value)
        for key, value in assumption.params.items()
    }
    try:
        return str(gettext(assumption.template) % params)
    except (KeyError, TypeError, ValueError):
        return str(assumption.text)


@register.filter
def source_text(source: str) -> str:
    """An assumption's source note, translated where the catalogue has it (the estimator marks
    each with gettext_noop; citations inside stay as published)."""
    if not source:
        return ""
    whole = gettext(source)
    if whole != source:
        return str(whole)
    return "; ".join(str(gettext(part)) for part in source.split("; "))


PHASES = {
    "prefill forward": _("prefill forward pass"),
    "forward (loss)": _("forward pass, at the loss"),
    "backward (start)": _("start of the backward pass"),
    "backward (end)": _("end of the backward pass"),
    "optimizer step": _("optimizer step"),
    "load": _("start-up, where the runtime allocates its buffers"),
    "backward (recompute)": _("backward pass, while a checkpointed layer is recomputed"),
}


@register.filter
def phase_label(phase: str) -> str:
    return labels(PHASES).get(phase, phase)


@register.simple_tag
def fits_link(
    workload: Any, preset: Any, precision: str, gpus: int = 1, gpu: Any = None, gb: Any = None
) -> str:
    from calculator.reverse import calculator_query

    return calculator_query(
        workload,
        preset,
        precision,
        gpus,
        gpu_slug=getattr(gpu, "slug", "") or "",
        vram_gb=float(gb) if gb else None,
    )


PRECISION_LABELS = {
    "fp32": "FP32",
    "bf16": "FP16/BF16",
    "int8": "INT8",
    "int4": "INT4",
    "int2": "INT2",
    "nf4": "NF4 (QLoRA)",
    "mixed": _("BF16 mixed precision"),
    # vLLM's --quantization values (the 'what fits' page's columns for vLLM).
    "none": _("None (BF16/FP16)"),
    "awq": "AWQ",
}


@register.filter
def precision_label(precision: str) -> str:
    return str(PRECISION_LABELS.get(precision, precision.upper()))


@register.filter
def duration(seconds: float | None) -> str:
    """A running time as people say it: minutes, hours or days, in the active language."""
    if seconds is None:
        return "—"
    if seconds < 120:
        return gettext_memo("%(n)s s") % {"n": num(seconds, 1 if seconds < 10 else 0)}
    if seconds < 2 * 3600:
        return gettext_memo("%(n)s min") % {"n": num(seconds / 60, 0)}
    if seconds < 48 * 3600:
        return gettext_memo("%(n)s h") % {"n": num(seconds / 3600, 1)}
    return gettext_memo("%(n)s days") % {"n": num(seconds / 86400, 1)}


@register.filter
def stack_label(stack: str) -> str:
    from calculator.forms import STACK_CHOICES

    return labels(STACK_CHOICES).get(stack, stack)


@register.filter
def switches_summary(switches: Any) -> str:
    """The switches a training estimate used, in the active language; the ones the visitor set
    (not the stack's defaults) are marked with *."""
    from calculator.forms import CHECKPOINTING_CHOICES, LOSS_CHOICES, OPTIMIZER_IMPL_CHOICES

    def mark(name: str, text: str) -> str:
        return text if name in switches.from_stack else f"{text}*"

    parts = [
        mark(
            "optimizer_impl",
            gettext_memo("optimizer: %(v)s")
            % {"v": labels(OPTIMIZER_IMPL_CHOICES)[switches.optimizer_impl]},
        ),
        mark("loss", gettext_memo("loss: %(v)s") % {"v": labels(LOSS_CHOICES)[switches.loss]}),
        mark(
            "activation_checkpointing",
            gettext_memo("checkpointing: %(v)s")
            % {"v": labels(CHECKPOINTING_CHOICES)[switches.activation_checkpointing]},
        ),
    ]
    for name, label in (
        ("activation_offloading", gettext_noop("activations in CPU RAM")),
        ("optimizer_offload", gettext_noop("optimizer in CPU RAM")),
        ("parameter_offload", gettext_noop("weights in CPU RAM")),
        ("sequence_parallel", gettext_noop("sequence parallel")),
    ):
        if getattr(switches, name):
            parts.append(mark(name, gettext_memo(label)))
    return ", ".join(parts)


@contextmanager
def fragment_language() -> Iterator[None]:
    """While a Jinja2 fragment renders (and while the calculator computes the result it shows),
    its figures and texts use the active language, looked up once (see RENDER_LANGUAGE)."""
    token = RENDER_LANGUAGE.set(get_language())
    try:
        yield
    finally:
        RENDER_LANGUAGE.reset(token)


@register.simple_tag(takes_context=True)
def jinja(context: template.Context, name: str) -> str:
    """A Jinja2 fragment (config/jinja2.py) rendered with this template's context."""
    fragment = engines["jinja2"].get_template(name)
    values: dict[str, Any] = {str(key): value for key, value in context.flatten().items()}
    with fragment_language():
        return mark_safe(fragment.render(values, context.get("request")))

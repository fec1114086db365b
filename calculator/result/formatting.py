"""Formatting at the edge: bytes become GiB/GB here and nowhere else, numbers and labels come
out in the visitor's language, and the query strings of the result's links are built here.
Plain functions, used by the presenters and registered as template filters and tags by
calculator/templatetags/calculator_format.py (and by config/jinja2.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from calculator.inputs.l10n import active_language, catalogue_name, decimal, gettext_memo, labels

__all__ = ["catalogue_name"]


def gib(value: int) -> str:
    """Bytes as GiB (2³⁰), two decimals, in the active locale's number format."""
    return decimal(value / (1 << 30), 2)


def gb(value: int) -> str:
    """Bytes as GB (10⁹), two decimals, in the active locale's number format."""
    return decimal(value / 1e9, 2)


def billions(value: int) -> str:
    return decimal(value / 1e9, 2 if value < 1e11 else 1)


def num(value: float, places: int = 0) -> str:
    """Any figure (tokens, counts, GiB already divided) in the locale's format, rounded."""
    return decimal(value, int(places))


# Typography of a percentage: French, German and Spanish (RAE) put a (narrow no-break) space
# before the sign.
PERCENT_SPACED = {"fr", "de", "es"}


def percent(value: float, places: int = 0) -> str:
    """A percentage with the sign, as the active language writes it ("30.6%", "30,6 %")."""
    figure = decimal(value, int(places))
    language = active_language().split("-")[0]
    return f"{figure}\u202f%" if language in PERCENT_SPACED else f"{figure}%"


def urlencoded(query: QueryDict) -> str:
    """``query.urlencode()``, in one call to urllib instead of one per value (QueryDict's own
    way, which was a tenth of the fragment's rendering). An immutable query (a permalink:
    views.permalink_for) is encoded once: a fragment writes it into half a dozen links."""
    if query._mutable:
        return urlencode(list(query.lists()), doseq=True)
    text: str | None = query.__dict__.get("_urlencoded")
    if text is None:
        text = query.__dict__["_urlencoded"] = urlencode(list(query.lists()), doseq=True)
    return text


def query_with(query: QueryDict, **changes: Any) -> str:
    """The current query string with some values replaced (for lever and suggestion links): a
    replaced key keeps its place, a new one comes last (as ``QueryDict.__setitem__`` would), and
    one changed to None is left out."""
    pairs: list[tuple[str, str]] = []
    for key, values in query.lists():
        if key in changes:
            if changes[key] is not None:
                pairs.append((key, str(changes[key])))
        else:
            pairs.extend((key, value) for value in values)
    pairs.extend(
        (key, str(value))
        for key, value in changes.items()
        if key not in query and value is not None
    )
    return urlencode(pairs)


def query_merge(query: QueryDict, changes: dict[str, Any]) -> str:
    """The current query string with a set of values replaced (one-click runtime defaults)."""
    return query_with(query, **changes)


def as_query(changes: dict[str, Any]) -> str:
    """A set of values as a query string: what a one-click link sets (app.js applies it to the
    address the page has reached when the link is used)."""
    return urlencode(changes)


def assumption_text(assumption: Any) -> str:
    """The estimator's English template, translated, with its values filled in (numbers in the
    locale's format, like every other figure on the page)."""
    params = {
        key: decimal(value, 0)
        if isinstance(value, int) and not isinstance(value, bool)
        else (_translated_param(value) if isinstance(value, str) and value else value)
        for key, value in assumption.params.items()
    }
    try:
        return gettext_memo(assumption.template) % params
    except (KeyError, TypeError, ValueError):
        return str(assumption.text)


def _translated_param(value: str) -> str:
    """A text value of an assumption, translated; a list the estimator joined with ", " (the
    stack's switches) item by item."""
    whole = gettext_memo(value)
    if whole != value or ", " not in value:
        return whole
    return ", ".join(gettext_memo(part) for part in value.split(", "))


def source_text(source: str) -> str:
    """An assumption's source note, translated where the catalogue has it (the estimator marks
    each with gettext_noop; citations inside stay as published)."""
    if not source:
        return ""
    whole = gettext_memo(source)
    if whole != source:
        return whole
    return "; ".join(gettext_memo(part) for part in source.split("; "))


PHASES = {
    "prefill forward": _("prefill forward pass"),
    "forward (loss)": _("forward pass, at the loss"),
    "backward (start)": _("start of the backward pass"),
    "backward (end)": _("end of the backward pass"),
    "optimizer step": _("optimizer step"),
    "load": _("start-up, where the runtime allocates its buffers"),
    "backward (recompute)": _("backward pass, while a checkpointed layer is recomputed"),
}


def phase_label(phase: str) -> str:
    return labels(PHASES).get(phase, phase)


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


def precision_label(precision: str) -> str:
    return str(PRECISION_LABELS.get(precision, precision.upper()))


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


def stack_label(stack: str) -> str:
    from calculator.inputs.forms import STACK_CHOICES

    return labels(STACK_CHOICES).get(stack, stack)


def switches_summary(switches: Any) -> str:
    """The switches a training estimate used, in the active language; the ones the visitor set
    (not the stack's defaults) are marked with *."""
    from calculator.inputs.forms import CHECKPOINTING_CHOICES, LOSS_CHOICES, OPTIMIZER_IMPL_CHOICES

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

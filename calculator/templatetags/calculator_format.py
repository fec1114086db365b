"""Formatting at the edge: bytes become GiB/GB here and nowhere else."""

from __future__ import annotations

from typing import Any

from django import template
from django.forms import BoundField, Form
from django.http import QueryDict
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

register = template.Library()


@register.filter
def gib(value: int) -> str:
    """Bytes as GiB (2³⁰), two decimals, in the active locale's number format."""
    return number_format(value / (1 << 30), 2, use_l10n=True, force_grouping=True)


@register.filter
def gb(value: int) -> str:
    """Bytes as GB (10⁹), two decimals, in the active locale's number format."""
    return number_format(value / 1e9, 2, use_l10n=True, force_grouping=True)


@register.filter
def billions(value: int) -> str:
    return number_format(value / 1e9, 2 if value < 1e11 else 1, use_l10n=True, force_grouping=True)


@register.filter
def field(form: Form, name: str) -> BoundField:
    return form[name]


@register.simple_tag
def query_with(query: QueryDict, **changes: Any) -> str:
    """The current query string with some values replaced (for lever and suggestion links)."""
    updated = query.copy()
    for key, value in changes.items():
        updated[key] = str(value)
    return updated.urlencode()


@register.filter
def assumption_text(assumption: Any) -> str:
    """The estimator's English template, translated, with its values filled in."""
    try:
        return str(gettext(assumption.template) % assumption.params)
    except (KeyError, TypeError, ValueError):
        return str(assumption.text)


PHASES = {
    "prefill forward": _("prefill forward pass"),
    "forward (loss)": _("forward pass, at the loss"),
    "backward (start)": _("start of the backward pass"),
    "backward (end)": _("end of the backward pass"),
    "optimizer step": _("optimizer step"),
}


@register.filter
def phase_label(phase: str) -> str:
    return str(PHASES.get(phase, phase))


@register.simple_tag
def fits_link(workload: Any, preset: Any, precision: str, gpus: int = 1) -> str:
    from calculator.reverse import calculator_query

    return calculator_query(workload, preset, precision, gpus)


PRECISION_LABELS = {
    "fp32": "FP32",
    "bf16": "FP16/BF16",
    "int8": "INT8",
    "int4": "INT4",
    "int2": "INT2",
    "nf4": "NF4 (QLoRA)",
    "mixed": _("BF16 mixed precision"),
}


@register.filter
def precision_label(precision: str) -> str:
    return str(PRECISION_LABELS.get(precision, precision.upper()))

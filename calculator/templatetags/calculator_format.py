"""The page's template filters and tags (``{% load calculator_format %}``): the formatting of
calculator/result/formatting.py, and the few that need Django's templates or the reverse
search."""

from __future__ import annotations

from typing import Any

from django import template
from django.forms import BoundField, Form
from django.template import engines
from django.utils.safestring import mark_safe

from calculator.inputs.l10n import fragment_language
from calculator.result import formatting

register = template.Library()
register.filter("catalogue_name", formatting.catalogue_name)
FILTERS = (
    "gib",
    "gb",
    "billions",
    "num",
    "percent",
    "as_query",
    "assumption_text",
    "source_text",
    "phase_label",
    "precision_label",
    "duration",
    "stack_label",
    "switches_summary",
)
TAGS = ("query_with", "query_merge")
for _name in FILTERS:
    register.filter(_name, getattr(formatting, _name))
for _name in TAGS:
    register.simple_tag(getattr(formatting, _name), name=_name)


@register.filter
def field(form: Form, name: str) -> BoundField:
    return form[name]


@register.simple_tag
def fits_link(
    workload: Any, preset: Any, precision: str, gpus: int = 1, gpu: Any = None, gb: Any = None
) -> str:
    from calculator.result.reverse import calculator_query

    return calculator_query(
        workload,
        preset,
        precision,
        gpus,
        gpu_slug=getattr(gpu, "slug", "") or "",
        vram_gb=float(gb) if gb else None,
    )


@register.simple_tag(takes_context=True)
def jinja(context: template.Context, name: str) -> str:
    """A Jinja2 fragment (config/jinja2.py) rendered with this template's context."""
    fragment = engines["jinja2"].get_template(name)
    values: dict[str, Any] = {str(key): value for key, value in context.flatten().items()}
    with fragment_language():
        return mark_safe(fragment.render(values, context.get("request")))

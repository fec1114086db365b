from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.utils import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails
from pydantic import ValidationError as PydanticValidationError

from calculator import presenters
from calculator.estimator import ConfigError, EstimateResult, resolve_architecture
from calculator.forms import (
    DEFAULTS,
    CalculatorForm,
    attach_estimator_error,
    custom_model_payload,
)
from calculator.models import GpuSpec
from calculator.selectors import gpu_list, preset_resolve, preset_suggest

CUSTOM_FIELDS = (
    "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "inter", "vocab", "experts",
    "active_experts",
)  # fmt: skip


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok"})


def _form_data(query: QueryDict) -> QueryDict:
    """The submitted values over the defaults, so a partial permalink still works."""
    data = QueryDict(mutable=True)
    for key, value in DEFAULTS.items():
        if isinstance(value, list):
            data.setlist(key, value)
        else:
            data[key] = str(value)
    submitted = {key for key in query if key in CalculatorForm.base_fields}
    for key in submitted:
        data.setlist(key, query.getlist(key))
    return data


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def index(request: HtmxHttpRequest) -> HttpResponse:
    source = request.POST if request.method == "POST" else request.GET
    form = CalculatorForm(_form_data(source))
    context: dict[str, Any] = {"form": form, "gpus": gpu_list(), "custom_fields": CUSTOM_FIELDS}
    if form.is_valid():
        context.update(_calculate(form))
    template = "calculator/index.html"
    if request.htmx and not request.htmx.history_restore_request:
        template += "#result"
    return render(request, template, context)


def _resolve_model(form: CalculatorForm) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    cleaned = form.cleaned_data
    extra: dict[str, Any] = {}
    if cleaned["source"] == "custom":
        return custom_model_payload(cleaned), extra
    if cleaned["source"] == "config":
        return {"config": cleaned["config_dict"]}, extra
    match = preset_resolve(text=cleaned["model"])
    if match.preset is None:
        form.add_error(
            "model", _("No model in the catalogue matches “%(name)s”.") % {"name": cleaned["model"]}
        )
        extra["suggestions"] = match.suggestions
        return None, extra
    extra["preset"] = match.preset
    return {"config": match.preset.config}, extra


def _calculate(form: CalculatorForm) -> dict[str, Any]:
    model, context = _resolve_model(form)
    if model is None:
        return context
    try:
        estimate_request = form.estimate_request(model)
        result = presenters.cached_estimate(estimate_request)
        arch = resolve_architecture(estimate_request.model)
    except (ConfigError, PydanticValidationError) as error:
        attach_estimator_error(form, error)
        return context
    gpu = _selected_gpu(form.cleaned_data.get("gpu") or "")
    context.update(
        request_obj=estimate_request,
        result=result,
        arch=arch,
        **_result_context(estimate_request, result, gpu),
    )
    return context


def _selected_gpu(slug: str) -> GpuSpec | None:
    return (
        GpuSpec.objects.filter(slug=slug, active=True).first()
        or GpuSpec.objects.filter(slug=DEFAULTS["gpu"]).first()
    )


def _result_context(
    estimate_request: Any, result: EstimateResult, gpu: GpuSpec | None
) -> dict[str, Any]:
    rows = presenters.breakdown_rows(result)
    context: dict[str, Any] = {"rows": rows, "gpu": gpu}
    scale = result.total_bytes
    if gpu is not None:
        scale = max(scale, gpu.usable_bytes)
        context["verdict"] = presenters.verdict(
            result.total_bytes, gpu.usable_bytes, gpu.nominal_bytes
        )
        context["capacity_x"] = 1000.0 * gpu.usable_bytes / scale
        usable = gpu.usable_bytes
        context["levers"] = {
            "seq": presenters.largest_fitting(estimate_request, "seq_len", usable, 1 << 22),
            "batch": presenters.largest_fitting(estimate_request, "batch_size", usable, 1 << 16),
            "precision": presenters.highest_fitting_precision(estimate_request, usable),
        }
    context["segments"] = presenters.chart_segments(rows, scale)
    totals = presenters.sharded_totals(estimate_request)
    context["fits"] = presenters.gpu_fits(list(gpu_list()), totals)
    return context


@require_GET
def suggest(request: HttpRequest) -> HttpResponse:
    text = request.GET.get("model", "")[:200]
    return render(
        request, "calculator/_suggestions.html", {"suggestions": preset_suggest(text=text)}
    )

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.utils import DatabaseError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
    QueryDict,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails
from pydantic import ValidationError as PydanticValidationError

from calculator import presenters, ratelimit, reverse
from calculator.estimator import ConfigError, ConfigModel, EstimateResult, resolve_architecture
from calculator.forms import (
    DEFAULTS,
    FITS_MODE_CHOICES,
    CalculatorForm,
    FitsForm,
    attach_estimator_error,
    custom_model_payload,
)
from calculator.models import GpuSpec, ModelPreset, SavedResult, config_hash
from calculator.selectors import (
    SNAPSHOT,
    CatalogueSnapshot,
    catalogue_version,
    gpu_list,
    preset_list,
    preset_suggest,
)
from calculator.services import saved_result_create

MAX_QUERY_CHARS = 16_000
FIELDS_WITH_ERRORS = tuple(name for name in CalculatorForm.base_fields if name != "gpu")

CUSTOM_FIELDS = (
    "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "inter", "vocab", "experts",
    "active_experts",
)  # fmt: skip


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def ping(request: HttpRequest) -> HttpResponse:
    """The trivial view the load benchmark compares the recompute endpoint with."""
    return HttpResponse("pong", content_type="text/plain")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok"})


def form_data(query: QueryDict) -> QueryDict:
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


RESULT_CACHE_SECONDS = 600


def catalogue_for(request: HttpRequest) -> CatalogueSnapshot:
    """The process's catalogue memo, refreshed once per request against the database."""
    if not hasattr(request, "_catalogue"):
        request._catalogue = SNAPSHOT.refresh(catalogue_version())  # type: ignore[attr-defined]
    return request._catalogue  # type: ignore[attr-defined, no-any-return]


def _cache_key(request: HtmxHttpRequest) -> str | None:
    """Rendered responses are cached per language, permalink and catalogue version."""
    if request.method != "GET" or request.GET.get("format"):
        return None
    partial = bool(request.htmx and not request.htmx.history_restore_request)
    raw = "|".join(
        [
            get_language() or "",
            str(partial),
            request.get_full_path(),
            catalogue_for(request).version or "",
        ]
    )
    return "page:" + hashlib.sha256(raw.encode()).hexdigest()


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def index(request: HtmxHttpRequest) -> HttpResponse:
    key = _cache_key(request)
    cached = cache.get(key) if key else None
    if cached is not None:
        content, reswap = cached
        response = HttpResponse(content)
        if reswap:
            response["HX-Reswap"] = reswap
        return response
    response = _index(request)
    if key and response.status_code == 200:
        cache.set(key, (response.content, response.get("HX-Reswap")), RESULT_CACHE_SECONDS)
    return response


def _index(request: HtmxHttpRequest) -> HttpResponse:
    source = request.POST if request.method == "POST" else request.GET
    form = CalculatorForm(form_data(source))
    context: dict[str, Any] = {
        "form": form,
        "gpus": catalogue_for(request).gpus,
        "custom_fields": CUSTOM_FIELDS,
    }
    if form.is_valid():
        context.update(_calculate(form, catalogue_for(request)))
    # Every field's message slot is refreshed, so fixed fields lose their old message.
    context["field_errors"] = [(name, form.errors.get(name, ())) for name in FIELDS_WITH_ERRORS]
    export = source.get("format")
    if export in {"json", "md"} and "result" in context:
        return _export(request, export, context)
    template = "calculator/index.html"
    if request.htmx and not request.htmx.history_restore_request:
        response = render(request, template + "#result", context)
        if "result" not in context:
            # Keep the last valid result on screen (dimmed); only the field messages change.
            response["HX-Reswap"] = "none"
        return response
    return render(request, template, context)


@dataclass(frozen=True)
class ResolvedModel:
    """What a valid form describes: the estimator's model, and the preset if one was named."""

    model: dict[str, Any] | ConfigModel | None
    preset: ModelPreset | None = None
    suggestions: tuple[ModelPreset, ...] = ()


def resolve_form_model(form: CalculatorForm, catalogue: CatalogueSnapshot) -> ResolvedModel:
    """The model a cleaned calculator form (page or API permalink) describes."""
    cleaned = form.cleaned_data
    if cleaned["source"] == "custom":
        return ResolvedModel(custom_model_payload(cleaned))
    if cleaned["source"] == "config":
        return ResolvedModel({"config": cleaned["config_dict"]})
    match = catalogue.resolve(cleaned["model"])
    if match.preset is None:
        return ResolvedModel(None, suggestions=tuple(match.suggestions))
    return ResolvedModel(catalogue.description(match.preset), match.preset)


def _resolve_model(
    form: CalculatorForm, catalogue: CatalogueSnapshot
) -> tuple[dict[str, Any] | ConfigModel | None, dict[str, Any]]:
    resolved = resolve_form_model(form, catalogue)
    extra: dict[str, Any] = {}
    if resolved.preset is not None:
        extra["preset"] = resolved.preset
    if resolved.model is None:
        name = form.cleaned_data["model"]
        form.add_error("model", _("No model in the catalogue matches “%(name)s”.") % {"name": name})
        extra["suggestions"] = list(resolved.suggestions)
    return resolved.model, extra


def _calculate(form: CalculatorForm, catalogue: CatalogueSnapshot) -> dict[str, Any]:
    model, context = _resolve_model(form, catalogue)
    if model is None:
        return context
    try:
        estimate_request = form.estimate_request(model)
        result = presenters.cached_estimate(estimate_request)
        arch = resolve_architecture(estimate_request.model)
    except (ConfigError, PydanticValidationError) as error:
        attach_estimator_error(form, error)
        return context
    gpu = catalogue.gpu(form.cleaned_data.get("gpu") or "", DEFAULTS["gpu"])
    context["gpu"] = gpu
    context.update(
        request_obj=estimate_request,
        result=result,
        arch=arch,
        **_result_context(estimate_request, result, gpu, arch, catalogue.gpus),
    )
    return context


def _result_context(
    estimate_request: Any,
    result: EstimateResult,
    gpu: GpuSpec | None,
    arch: Any,
    gpus: list[GpuSpec],
) -> dict[str, Any]:
    rows = presenters.breakdown_rows(result, estimate_request, arch)
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
            "seq": presenters.largest_fitting(
                estimate_request,
                "seq_len",
                usable,
                (arch.max_position_embeddings or 1 << 22) if arch else 1 << 22,
            ),
            "batch": presenters.largest_fitting(estimate_request, "batch_size", usable, 1 << 16),
            "precision": presenters.highest_fitting_precision(estimate_request, usable),
        }
        if estimate_request.mode != "inference" and not estimate_request.gradient_checkpointing:
            checkpointed = presenters.cached_estimate(
                presenters.with_changes(estimate_request, gradient_checkpointing=True)
            )
            context["levers"]["checkpointing_bytes"] = checkpointed.total_bytes
    context["segments"] = presenters.chart_segments(rows, scale)
    totals = presenters.sharded_totals(estimate_request)
    context["fits"] = presenters.gpu_fits(gpus, totals)
    return context


def _export(request: HttpRequest, export: str, context: dict[str, Any]) -> HttpResponse:
    """The result as JSON (the estimator's schema plus the verdict) or as a Markdown table."""
    result: EstimateResult = context["result"]
    verdict = context.get("verdict")
    gpu = context.get("gpu")
    if export == "json":
        payload: dict[str, Any] = result.model_dump(mode="json")
        if verdict is not None and gpu is not None:
            payload["verdict"] = {
                "gpu": gpu.slug,
                "usable_bytes": gpu.usable_bytes,
                "fits": verdict.fits,
            }
        return JsonResponse(payload)
    preset = context.get("preset")
    text = presenters.markdown(
        result,
        presenters.breakdown_rows(result),
        title=preset.display_name if preset else _("Custom model"),
        gpu_name=gpu.name if gpu else None,
        verdict=verdict,
        link=request.build_absolute_uri(request.path) + "?" + _permalink_query(request),
    )
    return HttpResponse(text, content_type="text/markdown; charset=utf-8")


def _permalink_query(request: HttpRequest) -> str:
    query = request.GET.copy()
    query.pop("format", None)
    return query.urlencode()


def _client_address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR", "unknown"))


def _within_rate(request: HttpRequest, bucket: str, limit: int, window_seconds: int) -> bool:
    """A fixed-window counter per client address, shared by all workers (calculator.ratelimit)."""
    return ratelimit.rate_limit_within(
        bucket=bucket, client=_client_address(request), limit=limit, window_seconds=window_seconds
    )


@csrf_exempt
@require_POST
def save_result(request: HttpRequest) -> HttpResponse:
    """Store the result of a permalink as a frozen snapshot and show it at /r/<id>.

    CSRF-exempt on purpose: the form sits in cached result fragments, which cannot carry a
    per-visitor token, and a forged request could only create a harmless snapshot of a public
    calculation (rate-limited per client like any other).
    """
    if not _within_rate(request, "save", settings.SAVED_RESULT_RATE_PER_HOUR, 3600):
        response = HttpResponse(
            _("Too many saved links from your address; try again later."), status=429
        )
        response["Retry-After"] = "3600"
        return response
    query = request.POST.get("query", "")[:MAX_QUERY_CHARS]
    form = CalculatorForm(form_data(QueryDict(query)))
    context = _calculate(form, catalogue_for(request)) if form.is_valid() else {}
    if "result" not in context:
        return HttpResponseBadRequest(_("This result cannot be saved: fix the form first."))
    saved = saved_result_create(
        query=query,
        request=context["request_obj"],
        result=context["result"],
        preset=context.get("preset"),
        gpu=context.get("gpu"),
    )
    return redirect("calculator:saved", saved_id=saved.id)


@require_GET
def saved(request: HttpRequest, saved_id: str) -> HttpResponse:
    snapshot = get_object_or_404(SavedResult, pk=saved_id)
    result = EstimateResult.model_validate(snapshot.result_json)
    rows = presenters.breakdown_rows(result)
    context: dict[str, Any] = {"snapshot": snapshot, "result": result, "rows": rows}
    scale = result.total_bytes
    if snapshot.gpu_usable_bytes:
        scale = max(scale, snapshot.gpu_usable_bytes)
        context["verdict"] = presenters.verdict(
            result.total_bytes, snapshot.gpu_usable_bytes, snapshot.gpu_nominal_bytes or 0
        )
        context["gpu"] = {"name": snapshot.gpu_name}
        context["capacity_x"] = 1000.0 * snapshot.gpu_usable_bytes / scale
    context["segments"] = presenters.chart_segments(rows, scale)
    preset = snapshot.preset
    context["preset"] = {"display_name": snapshot.preset_name} if snapshot.preset_name else None
    context["preset_changed"] = bool(snapshot.preset_name) and (
        preset is None or config_hash(preset.config) != snapshot.preset_config_hash
    )
    return render(request, "calculator/saved.html", context)


@require_GET
def suggest(request: HttpRequest) -> HttpResponse:
    text = request.GET.get("model", "")[:200]
    return render(
        request, "calculator/_suggestions.html", {"suggestions": preset_suggest(text=text)}
    )


@require_GET
def fits(request: HttpRequest) -> HttpResponse:
    """The honest 'what fits in my VRAM' table, and every catalogue model that fits your GPU."""
    data = QueryDict(mutable=True)
    for key, value in FitsForm.DEFAULTS.items():
        data[key] = str(value)
    for key in request.GET:
        if key in FitsForm.base_fields:
            data.setlist(key, request.GET.getlist(key))
    form = FitsForm(data)
    context: dict[str, Any] = {"form": form, "gpus": gpu_list()}
    if form.is_valid():
        c = form.cleaned_data
        workload = reverse.Workload(mode=c["mode"], seq_len=c["seq"], batch_size=c["batch"])
        presets = list(preset_list())
        context["workload"] = workload
        context["mode_label"] = dict(FITS_MODE_CHOICES)[workload.mode]
        context["precisions"] = reverse.PRECISIONS_BY_MODE[workload.mode]
        context["table"] = reverse.tier_table(workload, presets)
        gpu = GpuSpec.objects.filter(slug=c.get("gpu") or "", active=True).first()
        usable = (
            gpu.usable_bytes
            if gpu
            else (reverse.tier_usable_bytes(c["gb"]) if c.get("gb") else None)
        )
        if usable:
            context["own"] = {
                "gpu": gpu,
                "gb": c.get("gb"),
                "count": c["count"],
                "usable_bytes": usable,
                "models": reverse.models_that_fit(workload, presets, usable, c["count"]),
            }
    return render(request, "calculator/fits.html", context)

from __future__ import annotations

import hashlib
import re
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
from django.utils.datastructures import MultiValueDict
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails
from pydantic import ValidationError as PydanticValidationError

from calculator import forms as forms_module
from calculator import presenters, ratelimit, reverse
from calculator.calculation import Calculation, Card, own_card, request_on_card
from calculator.estimator import ConfigError, ConfigModel, EstimateResult
from calculator.forms import (
    CUSTOM_FIELDS,
    DEFAULTS,
    FITS_MODE_CHOICES,
    PERMALINK_KEYS,
    CalculatorForm,
    FitsForm,
    attach_estimator_error,
    custom_model_payload,
)
from calculator.hub import HubError, hub_resolve
from calculator.l10n import fragment_language
from calculator.models import GpuSpec, ModelPreset, SavedResult, config_hash
from calculator.selectors import (
    SNAPSHOT,
    CatalogueSnapshot,
    catalogue_version,
    gpu_list,
    gpu_performance,
    pasted_config_text,
    preset_list,
    preset_suggest,
)
from calculator.services import pasted_config_store, saved_result_create

MAX_QUERY_CHARS = 16_000
PASTED_CONFIG_ID = re.compile(r"[A-Za-z0-9_-]{22}")
# Longer pasted configs are stored and linked by id (gunicorn's request line is 8190 bytes).
MAX_LINKED_CONFIG_CHARS = 2_000
FIELDS_WITH_ERRORS = tuple(name for name in CalculatorForm.base_fields if name != "gpu")

# What the form template needs besides the form: field groups, where each field applies and
# the runtime presets.
FORM_CONTEXT: dict[str, Any] = {
    "applies": forms_module.FIELD_APPLIES,
    "custom_fields": CUSTOM_FIELDS,
    "llama_cpp_fields": forms_module.LLAMA_CPP_FIELDS,
    "vllm_fields": forms_module.VLLM_FIELDS,
    "stack_fields": forms_module.STACK_FIELDS,
    "runtime_presets": forms_module.RUNTIME_PRESETS,
}


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


_DEFAULT_VALUES = {
    key: [str(item) for item in value] if isinstance(value, list) else [str(value)]
    for key, value in DEFAULTS.items()
}


def form_data(query: QueryDict) -> MultiValueDict[str, str]:
    """The submitted values over the defaults, so a partial permalink still works. A stored
    pasted config (``cfg``) fills the config field when the text itself is not submitted.
    (A MultiValueDict, as a form reads it: a QueryDict would convert each default again.)"""
    data: MultiValueDict[str, str] = MultiValueDict(
        {key: list(values) for key, values in _DEFAULT_VALUES.items()}
    )
    submitted = {key for key in query if key in CalculatorForm.base_fields}
    for key in submitted:
        data.setlist(key, query.getlist(key))
    config_id = str(query.get("cfg", ""))
    if config_id and not (query.get("config") or "").strip():
        # Ids are 22 URL-safe characters; anything else is not looked up (PostgreSQL refuses
        # NUL bytes in a query, and nothing else could match).
        known = PASTED_CONFIG_ID.fullmatch(config_id)
        data["config"] = (pasted_config_text(config_id=config_id) if known else None) or ""
        data["cfg"] = config_id[:40]
    return data


def submitted_query(request: HttpRequest) -> QueryDict:
    """What the visitor submitted: the query string, or the body of a POST (the page posts
    when a pasted config is too long for a URL; a saved link's 'query' field is a query)."""
    if request.method != "POST":
        return request.GET
    if "query" in request.POST and len(request.POST) <= 2:
        query = QueryDict(request.POST["query"][:MAX_QUERY_CHARS], mutable=True)
        if request.POST.get("format"):
            query["format"] = request.POST["format"]
        return query
    return request.POST


def permalink_for(query: QueryDict, *, store_config: bool) -> QueryDict:
    """The shareable query for a submission: permalink keys only, and a pasted config replaced
    by the short id it is stored under (when the page posted it, or it is too long to link)."""
    link = QueryDict(mutable=True)
    unused = forms_module.unused_runtime_keys(query)
    for key in PERMALINK_KEYS:
        if key in query and key not in unused:
            link.setlist(key, query.getlist(key))
    text = str(query.get("config") or "").strip()
    if query.get("source") == "config" and text:
        if store_config or len(text) > MAX_LINKED_CONFIG_CHARS:
            link.pop("config", None)
            link["cfg"] = pasted_config_store(text=text[: forms_module.MAX_CONFIG_CHARS])
    elif "cfg" in query and query.get("source") == "config":
        link["cfg"] = str(query.get("cfg") or "")
    return link


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


@csrf_exempt
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def index(request: HtmxHttpRequest) -> HttpResponse:
    """The calculator: the whole page, or the result fragment for htmx.

    POST is accepted, and CSRF-exempt on purpose: the page posts a pasted config (too long for a
    URL) instead of putting it in the query string. Such a request only computes and stores the
    pasted text under its hash, which a forged request could do as harmlessly as a real one.
    """
    key = _cache_key(request)
    cached = cache.get(key) if key else None
    if cached is not None:
        content, reswap = cached
        response = HttpResponse(content)
        if reswap:
            response["HX-Reswap"] = reswap
        return response
    with fragment_language():  # the request's language, looked up once for every figure
        response = _index(request)
    cacheable = response.status_code == 200 and "no-store" not in response.get("Cache-Control", "")
    if key and cacheable and _seen_before(key):
        cache.set(key, (response.content, response.get("HX-Reswap")), RESULT_CACHE_SECONDS)
    return response


_SEEN: dict[str, None] = {}
_SEEN_LIMIT = 50_000


def _seen_before(key: str) -> bool:
    """Whether this worker has rendered ``key`` before: only then is it written to the shared
    cache. Most never-seen inputs are one keystroke of someone typing and are never asked again;
    writing each one cost a database (or Redis) write on the recompute's hot path (issue 16). A
    link that is shared is asked twice soon enough, and from then on every worker reads it."""
    if key in _SEEN:
        return True
    if len(_SEEN) >= _SEEN_LIMIT:
        _SEEN.clear()
    _SEEN[key] = None
    return False


def _index(request: HtmxHttpRequest) -> HttpResponse:
    query = submitted_query(request)
    form = CalculatorForm(form_data(query))
    context: dict[str, Any] = {
        "form": form,
        "gpus": catalogue_for(request).gpus,
        **FORM_CONTEXT,
    }
    partial = bool(request.htmx and not request.htmx.history_restore_request)
    if query.get("part") == "more":
        context["query"] = permalink_for(query, store_config=False)
        return _more_part(request, form, context)
    if form.is_valid():
        # The advice and the long GPU list come in a second request after the result (htmx).
        context.update(_calculate(form, catalogue_for(request), part="first" if partial else "all"))
    link = permalink_for(query, store_config=request.method == "POST" and "result" in context)
    context["query"] = link
    if request.method == "POST":
        request.permalink_path = f"{request.path}?{link.urlencode()}"  # type: ignore[attr-defined]
    # One out-of-band swap empties every message slot (fixed fields lose their old message);
    # only the fields with a message get their own.
    context["field_errors"] = [
        (name, form.errors[name]) for name in FIELDS_WITH_ERRORS if name in form.errors
    ]
    export = query.get("format")
    if export in {"json", "md"} and "result" in context:
        return _export(request, export, context)
    if request.htmx and not request.htmx.history_restore_request:
        # The recompute's answer is all Jinja2 (config/jinja2.py says why).
        response = render(request, "calculator/_result.jinja", context, using="jinja2")
        if "result" not in context:
            # Keep the last valid result on screen (dimmed); only the field messages change.
            response["HX-Reswap"] = "none"
            response["HX-Replace-Url"] = "false"
        elif request.method == "POST":
            response["HX-Replace-Url"] = f"{request.path}?{link.urlencode()}"
    else:
        response = render(request, "calculator/index.html", context)
    if "hub_error" in context:
        response["Cache-Control"] = "no-store"  # the Hub may answer the next time
    return response


@dataclass(frozen=True)
class ResolvedModel:
    """What a valid form describes: the estimator's model, and the preset if one was named."""

    model: dict[str, Any] | ConfigModel | None
    preset: ModelPreset | None = None
    suggestions: tuple[ModelPreset, ...] = ()
    hub_error: HubError | None = None


def resolve_form_model(form: CalculatorForm, catalogue: CatalogueSnapshot) -> ResolvedModel:
    """The model a cleaned calculator form (page or API permalink) describes."""
    cleaned = form.cleaned_data
    if cleaned["source"] == "custom":
        return ResolvedModel(custom_model_payload(cleaned))
    if cleaned["source"] == "config":
        return ResolvedModel({"config": cleaned["config_dict"]})
    match = catalogue.resolve(cleaned["model"])
    if match.preset is None:
        # Not in the catalogue: a Hugging Face repository id or URL is looked up on the Hub.
        try:
            preset = hub_resolve(
                text=cleaned["model"], catalogue=lambda t: catalogue.resolve(t).preset
            )
        except HubError as error:
            return ResolvedModel(None, hub_error=error)
        if preset is None:
            return ResolvedModel(None, suggestions=tuple(match.suggestions))
        return ResolvedModel(catalogue.description(preset), preset)
    return ResolvedModel(catalogue.description(match.preset), match.preset)


def _resolve_model(
    form: CalculatorForm, catalogue: CatalogueSnapshot
) -> tuple[dict[str, Any] | ConfigModel | None, dict[str, Any]]:
    resolved = resolve_form_model(form, catalogue)
    extra: dict[str, Any] = {}
    if resolved.preset is not None:
        extra["preset"] = resolved.preset
    if resolved.hub_error is not None:
        form.add_error("model", resolved.hub_error.message)
        extra["hub_error"] = resolved.hub_error
    elif resolved.model is None:
        name = form.cleaned_data["model"]
        form.add_error("model", _("No model in the catalogue matches “%(name)s”.") % {"name": name})
        extra["suggestions"] = list(resolved.suggestions)
    return resolved.model, extra


def _more_part(
    request: HtmxHttpRequest, form: CalculatorForm, context: dict[str, Any]
) -> HttpResponse:
    """What fits on this GPU (levers, advice) and which GPUs hold the job: the part of the
    result that the page loads after the rest."""
    if form.is_valid():
        context.update(_calculate(form, catalogue_for(request), part="more"))
    return render(request, "calculator/_more.jinja", context, using="jinja2")


def _calculate(
    form: CalculatorForm, catalogue: CatalogueSnapshot, *, part: str = "all"
) -> dict[str, Any]:
    """The result for a valid form: ``part`` is "first" (the breakdown and verdict; the rest
    is loaded after), "more" (only the advice and the GPU list) or "all"."""
    model, context = _resolve_model(form, catalogue)
    if model is None:
        return context
    vram = form.cleaned_data.get("vram")
    gpu: Card | None = (
        own_card(vram)
        if vram
        else catalogue.gpu(form.cleaned_data.get("gpu") or "", DEFAULTS["gpu"])
    )
    try:
        estimate_request = request_on_card(form.estimate_fields(model), gpu)
        calculation = Calculation(
            estimate_request,
            catalogue=catalogue,
            gpu=gpu,
            preset=context.get("preset"),
            host_ram_gb=form.cleaned_data.get("ram"),
        )
    except (ConfigError, PydanticValidationError) as error:
        attach_estimator_error(form, error)
        return context
    context.update(
        calculation=calculation,
        gpu=gpu,
        request_obj=calculation.request,
        result=calculation.result,
        arch=calculation.arch,
    )
    if part != "more":
        context.update(calculation.first_view())
    if part == "first":
        context["more_deferred"] = True
        return context
    context.update(calculation.advice())
    return context


def _export(request: HttpRequest, export: str, context: dict[str, Any]) -> HttpResponse:
    """The result as JSON (the estimator's schema, the model, the inputs and the verdict) or as
    a Markdown summary, both naming the model and echoing every input."""
    calculation: Calculation = context["calculation"]
    link = request.build_absolute_uri(request.path) + "?" + context["query"].urlencode()
    if export == "json":
        response: HttpResponse = JsonResponse(calculation.payload(permalink=link))
        response["Content-Disposition"] = 'attachment; filename="vram-estimate.json"'
        return response
    return HttpResponse(
        calculation.markdown(link=link), content_type="text/markdown; charset=utf-8"
    )


def client_address(request: HttpRequest) -> str:
    """The visitor's address: with ``DJANGO_PROXY_COUNT`` trusted proxies in front, the entry
    of X-Forwarded-For that the outermost of them added (what the client itself wrote there is
    ignored); without proxies, the connection's address."""
    proxies = settings.PROXY_COUNT
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if len(hops) >= proxies:
            return hops[-proxies]
    return str(request.META.get("REMOTE_ADDR", "unknown"))


def _within_rate(request: HttpRequest, bucket: str, limit: int, window_seconds: int) -> bool:
    """A fixed-window counter per client address, shared by all workers (calculator.ratelimit)."""
    return ratelimit.rate_limit_within(
        bucket=bucket, client=client_address(request), limit=limit, window_seconds=window_seconds
    )


@csrf_exempt
@require_POST
def save_result(request: HttpRequest) -> HttpResponse:
    """Store the result of a permalink as a frozen snapshot and show it at /r/<id>.

    CSRF-exempt on purpose: the form sits in cached result fragments, which cannot carry a
    per-visitor token, and a forged request could only create a harmless snapshot of a public
    calculation (rate-limited per client like any other).
    """
    query = request.POST.get("query", "")[:MAX_QUERY_CHARS]
    form = CalculatorForm(form_data(QueryDict(query)))
    context: dict[str, Any] = {
        "form": form,
        "gpus": catalogue_for(request).gpus,
        **FORM_CONTEXT,
    }
    if form.is_valid():
        context.update(_calculate(form, catalogue_for(request)))
    if not _within_rate(request, "save", settings.SAVED_RESULT_RATE_PER_HOUR, 3600):
        # The whole page again, result included, with the reason above it: nothing is lost.
        context["query"] = permalink_for(QueryDict(query), store_config=False)
        context["notice"] = _(
            "You have saved many links in the last hour; this one was not saved. Try again in an hour — the result below is unchanged and its address can be copied from the address bar."
        )
        response = render(request, "calculator/index.html", context, status=429)
        response["Retry-After"] = "3600"
        return response
    if "result" not in context:
        return HttpResponseBadRequest(_("This result cannot be saved: fix the form first."))
    saved = saved_result_create(
        query=query,
        request=context["request_obj"],
        result=context["result"],
        preset=context.get("preset"),
        gpu=context.get("gpu") if isinstance(context.get("gpu"), GpuSpec) else None,
    )
    return redirect("calculator:saved", saved_id=saved.id)


@require_GET
def saved(request: HttpRequest, saved_id: str) -> HttpResponse:
    snapshot = get_object_or_404(SavedResult, pk=saved_id)
    result = EstimateResult.model_validate(snapshot.result_json)
    rows = presenters.breakdown_rows(result)
    context: dict[str, Any] = {"snapshot": snapshot, "result": result, "rows": rows}
    scale = result.total_bytes
    verdict = None
    stored_request = _stored_request(snapshot)
    if snapshot.gpu_usable_bytes:
        scale = max(scale, snapshot.gpu_usable_bytes)
        # As the live page judges it: vLLM starts only when one request fits its pool.
        vllm_settings = getattr(stored_request, "vllm", None)
        verdict = presenters.runtime_verdict(
            result,
            snapshot.gpu_usable_bytes,
            snapshot.gpu_nominal_bytes or 0,
            block_size=vllm_settings.block_size if vllm_settings else 16,
        )
        context["verdict"] = verdict
        context["gpu"] = {"name": snapshot.gpu_name}
        context["capacity_x"] = 1000.0 * snapshot.gpu_usable_bytes / scale
    context["segments"] = presenters.chart_segments(rows, scale)
    preset = snapshot.preset
    context["preset"] = {"display_name": snapshot.preset_name} if snapshot.preset_name else None
    context["preset_changed"] = bool(snapshot.preset_name) and (
        preset is None or config_hash(preset.config) != snapshot.preset_config_hash
    )
    name = snapshot.preset_name or str(_("Custom model"))
    if stored_request is not None:
        context["inputs"] = presenters.inputs_summary(
            stored_request, gpu_name=snapshot.gpu_name or None
        )
    export = request.GET.get("format")
    if export in {"json", "md"} and stored_request is not None:
        link = request.build_absolute_uri(request.path)
        if export == "json":
            payload = presenters.result_payload(
                result,
                stored_request,
                model_name=name,
                preset_slug=preset.slug if preset else None,
                hf_repo=preset.hf_repo if preset else None,
                model_type=str(
                    (snapshot.request_json.get("model") or {}).get("config", {}).get("model_type")
                    or "custom"
                ),
            )
            payload.update(permalink=link, saved_at=snapshot.created_at.isoformat())
            if verdict is not None:
                payload["verdict"] = presenters.verdict_payload(
                    result, verdict, gpu_slug=None, gpu_name=snapshot.gpu_name
                )
            response: HttpResponse = JsonResponse(payload)
            response["Content-Disposition"] = 'attachment; filename="vram-estimate.json"'
            return response
        text = presenters.markdown(
            result,
            rows,
            title=name,
            gpu_name=snapshot.gpu_name or None,
            verdict=verdict,
            link=link,
            inputs=context.get("inputs", []),
        )
        return HttpResponse(text, content_type="text/markdown; charset=utf-8")
    return render(request, "calculator/saved.html", context)


def _stored_request(snapshot: SavedResult) -> Any:
    """The request a snapshot was computed from, without re-reading the model."""
    from calculator.estimator import EstimateRequest

    fields = {key: value for key, value in snapshot.request_json.items() if key != "model"}
    try:
        return EstimateRequest.model_validate({**fields, "model": {"config": {}}})
    except (PydanticValidationError, ValueError):
        return None


@require_GET
def suggest(request: HttpRequest) -> HttpResponse:
    text = request.GET.get("model", "")[:200]
    return render(
        request, "calculator/_suggestions.html", {"suggestions": preset_suggest(text=text)}
    )


@require_GET
def fits(request: HtmxHttpRequest) -> HttpResponse:
    """The honest 'what fits in my VRAM' table, and every catalogue model that fits your GPU.

    Each setting takes hundreds of estimator searches (llama.cpp's per-tensor GGUF layout is the
    dearest), so the rendered page is cached the same way as the calculator's."""
    key = _cache_key(request)
    cached = cache.get(key) if key else None
    if cached is not None:
        return HttpResponse(cached)
    response = _fits(request)
    if key and response.status_code == 200:
        cache.set(key, response.content, RESULT_CACHE_SECONDS)
    return response


def _fits(request: HttpRequest) -> HttpResponse:
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
        workload = reverse.Workload(
            mode=c["mode"], seq_len=c["seq"], batch_size=c["batch"], runtime=c["runtime"]
        )
        presets = list(preset_list())
        context["workload"] = workload
        context["mode_label"] = dict(FITS_MODE_CHOICES)[workload.mode]
        context["precisions"] = workload.precisions
        context["large_quality_loss"] = reverse.LARGE_QUALITY_LOSS
        context["table"] = reverse.tier_table(workload, presets)
        gpu = GpuSpec.objects.filter(slug=c.get("gpu") or "", active=True).first()
        usable = (
            gpu.usable_bytes
            if gpu
            else (reverse.tier_usable_bytes(c["gb"]) if c.get("gb") else None)
        )
        if usable:
            speed_gpu = gpu_performance(gpu=gpu, count=c["count"]) if gpu else None
            context["own"] = {
                "gpu": gpu,
                "gb": c.get("gb"),
                "count": c["count"],
                "usable_bytes": usable,
                "models": reverse.models_that_fit(
                    workload, presets, usable, c["count"], speed_gpu=speed_gpu
                ),
                "speed": speed_gpu is not None,
            }
    return render(request, "calculator/fits.html", context)

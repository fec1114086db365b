from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.utils import DatabaseError, InterfaceError, OperationalError
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
    QueryDict,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.datastructures import MultiValueDict
from django.utils.html import escape
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django.views.defaults import server_error as django_server_error
from django_htmx.middleware import HtmxDetails
from pydantic import ValidationError as PydanticValidationError

from calculator.catalogue import ratelimit
from calculator.catalogue.clients import owner_key
from calculator.catalogue.hub import HubError, hub_resolve
from calculator.catalogue.limits import hub_import_allowed, within_rate
from calculator.catalogue.models import ModelPreset, SavedResult
from calculator.catalogue.selectors import (
    SNAPSHOT,
    CatalogueSnapshot,
    catalogue_version,
    gpu_list,
    gpu_performance,
    pasted_config_text,
    preset_suggest,
)
from calculator.catalogue.services import (
    StorageFull,
    pasted_config_store,
    pasted_config_stored,
)
from calculator.estimator import ConfigError, ConfigModel
from calculator.inputs import forms as forms_module
from calculator.inputs.forms import (
    CUSTOM_FIELDS,
    DEFAULTS,
    FITS_MODE_CHOICES,
    PERMALINK_KEYS,
    STACK_CHOICES,
    CalculatorForm,
    FitsForm,
    attach_estimator_error,
    custom_model_payload,
)
from calculator.inputs.l10n import fragment_language
from calculator.inputs.uploads import limit_text, oversize_fields
from calculator.result import reverse
from calculator.result.calculation import (
    Calculation,
    Card,
    host_ram_bytes,
    own_card,
    request_on_card,
)
from calculator.result.snapshots import preset_changed, saved_calculation, saved_result_create
from calculator.web.page_cache import page_cache_get, page_cache_key, page_cache_set

logger = logging.getLogger(__name__)
MAX_QUERY_CHARS = 16_000
PASTED_CONFIG_ID = re.compile(r"[A-Za-z0-9_-]{22}")
# What the calculator reads from a request besides its form fields (the key of a cached page).
INDEX_INPUT_KEYS = frozenset(CalculatorForm.base_fields) | {"cfg", "part"}
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
    """Whether the services every page needs answer: the database, and the shared cache (Redis
    with ``REDIS_URL``, else a table in that database) that holds rate limits and pages."""
    checks = {"database": "ok", "cache": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        checks["database"] = "unreachable"
    try:
        cache.get("healthz")
    except Exception:  # any backend's failure: Redis, database, network
        checks["cache"] = "unreachable"
    if any(state != "ok" for state in checks.values()):
        return JsonResponse({"status": "unavailable", **checks}, status=503)
    return JsonResponse({"status": "ok", **checks})


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
        # Whole, never cut: a cut query holds a cut config (the body is bounded already).
        query = QueryDict(request.POST["query"], mutable=True)
        if request.POST.get("format"):
            query["format"] = request.POST["format"]
        return query
    return request.POST


def permalink_for(
    query: QueryDict, *, store_config: bool, request: HttpRequest | None = None
) -> QueryDict:
    """The shareable query for a submission: permalink keys only, and a pasted config replaced
    by the short id it is stored under (when the page posted it, or it is too long to link).

    Storing is a write on a visitor's behalf, limited per client (``_stored_config_id``); a
    config it does not store stays in the link when short enough, and is otherwise left out,
    with the reason in ``request.storage_notice``."""
    link = QueryDict(mutable=True)
    unused = forms_module.unused_runtime_keys(query)
    for key in PERMALINK_KEYS:
        if key in query and key not in unused:
            link.setlist(key, query.getlist(key))
    text = str(query.get("config") or "").strip()
    if query.get("source") == "config" and len(text) > forms_module.MAX_CONFIG_CHARS:
        link.pop("config", None)  # refused as too long: neither stored nor linked
    elif query.get("source") == "config" and text:
        if store_config or len(text) > MAX_LINKED_CONFIG_CHARS:
            config_id = _stored_config_id(request, text)
            if config_id is not None:
                link.pop("config", None)
                link["cfg"] = config_id
            elif len(text) > MAX_LINKED_CONFIG_CHARS:
                link.pop("config", None)
    elif "cfg" in query and query.get("source") == "config":
        link["cfg"] = str(query.get("cfg") or "")
    link._mutable = False  # a permalink is read, never changed (formatting.urlencoded memo)
    return link


def _stored_config_id(request: HttpRequest | None, text: str) -> str | None:
    """The short id of a pasted config: one stored already costs nothing; a new one counts
    against the client's hourly limit and its own quota of rows (settings PASTED_CONFIG_*).
    None when it is not stored, with the reason in ``request.storage_notice``."""
    owner = owner_key(request) if request is not None else ""
    try:
        known = pasted_config_stored(text=text, owner=owner)
        if known is not None:
            return known
        if request is not None and not within_rate(
            request, "config", settings.PASTED_CONFIG_RATE_PER_HOUR, 3600
        ):
            notice = _(
                "This config is not stored for a short link: many configs were stored from your address in the last hour. The result is shown; try again in an hour for a link."
            )
        else:
            return pasted_config_store(text=text, owner=owner)
    except StorageFull:
        notice = _(
            "This config is not stored for a short link: the server's storage for pasted configs is full. The result is shown."
        )
    except (ratelimit.RateLimitUnavailable, DatabaseError):
        notice = _(
            "This config is not stored for a short link right now (the server's storage did not answer). The result is shown; try again in a minute."
        )
    if request is not None:
        request.storage_notice = notice  # type: ignore[attr-defined]
    return None


RESULT_CACHE_SECONDS = 600


def catalogue_for(request: HttpRequest) -> CatalogueSnapshot:
    """The process's catalogue memo, refreshed once per request against the database."""
    if not hasattr(request, "_catalogue"):
        request._catalogue = SNAPSHOT.refresh(catalogue_version())  # type: ignore[attr-defined]
    return request._catalogue  # type: ignore[attr-defined, no-any-return]


def _cache_key(request: HtmxHttpRequest, input_keys: frozenset[str]) -> str | None:
    """Rendered GET responses are cached per language, the inputs the view reads (only those:
    see calculator.web.page_cache) and catalogue version."""
    if request.method != "GET" or request.GET.get("format"):
        return None
    return page_cache_key(
        request,
        inputs=[(key, request.GET.getlist(key)) for key in request.GET if key in input_keys],
        partial=bool(request.htmx and not request.htmx.history_restore_request),
        version=catalogue_for(request).version or "",
    )


@csrf_exempt
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def index(request: HtmxHttpRequest) -> HttpResponse:
    """The calculator: the whole page, or the result fragment for htmx.

    POST is accepted, and CSRF-exempt on purpose: the page posts a pasted config (too long for a
    URL) instead of putting it in the query string. Such a request only computes and stores the
    pasted text under its hash, which a forged request could do as harmlessly as a real one.
    """
    key = _cache_key(request, INDEX_INPUT_KEYS)
    cached = page_cache_get(key) if key else None
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
        page_cache_set(key, (response.content, response.get("HX-Reswap")), RESULT_CACHE_SECONDS)
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
    _oversize_errors(request, form)
    context: dict[str, Any] = {
        "form": form,
        "gpus": catalogue_for(request).gpus,
        **FORM_CONTEXT,
    }
    partial = bool(request.htmx and not request.htmx.history_restore_request)
    if query.get("part") == "more":
        context["query"] = permalink_for(query, store_config=False, request=request)
        return _more_part(request, form, context)
    if partial and _unfinished_edit(request, form, query, catalogue_for(request)):
        return HttpResponse(status=204)  # htmx swaps nothing: the last result stays
    if form.is_valid():
        # The advice and the long GPU list come in a second request after the result (htmx).
        context.update(
            _calculate(
                form, catalogue_for(request), part="first" if partial else "all", request=request
            )
        )
    link = permalink_for(
        query, store_config=request.method == "POST" and "result" in context, request=request
    )
    context["query"] = link
    # The language links and alternates point at this link, never at the raw request (whose
    # unread keys a cached page must not repeat to the next visitor).
    request.permalink_path = _path_with(request.path, link)  # type: ignore[attr-defined]
    notice = getattr(request, "storage_notice", None)
    if notice:
        form.add_error("config", notice)
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
            response["HX-Replace-Url"] = _path_with(request.path, link)
    else:
        response = render(request, "calculator/index.html", context)
    if "hub_error" in context or notice:
        response["Cache-Control"] = "no-store"  # the Hub (or the storage) may answer next time
    preset = context.get("preset")
    if preset is not None and preset.is_unreviewed_import:
        # Unreviewed imports are not part of the catalogue version (an import must not empty
        # every cached page), so a page showing one is not cached under it either.
        response["Cache-Control"] = "no-store"
    return response


def _oversize_errors(request: HttpRequest, form: CalculatorForm) -> None:
    """A field the post left out for its size (``calculator.inputs.uploads``) gets that message in
    place of any other: a pasted config past ``MAX_CONFIG_CHARS`` is too long, any other field
    is too large to send."""
    unread = form.unread_fields()
    for name, size in oversize_fields(request).items():
        if name not in form.fields or name in unread:
            continue
        if name == "config" and size > forms_module.MAX_CONFIG_CHARS:
            message = forms_module.config_too_long_message()
        else:
            message = _(
                "Too large to send: this field held %(size)s, and a form may carry at most "
                "%(limit)s in all."
            ) % {"size": filesizeformat(size), "limit": limit_text()}
        form.errors[name] = form.error_class([message])


def _path_with(path: str, query: QueryDict) -> str:
    encoded = query.urlencode()
    return f"{path}?{encoded}" if encoded else path


@dataclass(frozen=True)
class ResolvedModel:
    """What a valid form describes: the estimator's model, and the preset if one was named."""

    model: dict[str, Any] | ConfigModel | None
    preset: ModelPreset | None = None
    suggestions: tuple[ModelPreset, ...] = ()
    hub_error: HubError | None = None
    # The preset stands for a dated release of its model the visitor named (PresetMatch.dated).
    dated: str | None = None


def resolve_form_model(
    form: CalculatorForm, catalogue: CatalogueSnapshot, request: HttpRequest | None = None
) -> ResolvedModel:
    """The model a cleaned calculator form (page or API permalink) describes; a Hub import
    it starts counts against ``request``'s client (``hub_import_allowed``)."""
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
                text=cleaned["model"],
                catalogue=lambda t: catalogue.resolve(t).preset,
                before_fetch=hub_import_allowed(request) if request is not None else None,
            )
        except HubError as error:
            return ResolvedModel(None, hub_error=error)
        if preset is None:
            return ResolvedModel(None, suggestions=tuple(match.suggestions))
        return ResolvedModel(catalogue.description(preset), preset)
    return ResolvedModel(catalogue.description(match.preset), match.preset, dated=match.dated)


def dated_release_note(typed: str, preset: ModelPreset) -> str:
    """What the page says when a dated release's name found its model's preset."""
    return _(
        "“%(typed)s” is a dated release of %(name)s with the same architecture: the figures "
        "are those of %(name)s."
    ) % {"typed": typed, "name": preset.local_name}


def _unfinished_edit(
    request: HttpRequest, form: CalculatorForm, query: QueryDict, catalogue: CatalogueSnapshot
) -> bool:
    """Whether a recompute sent while the visitor types in a field (app.js names it in
    X-Mid-Edit) finds that field empty or not making sense yet: a number cleared to be retyped,
    a model name half typed. The page answers as they type (issue 31), so such a keystroke must
    not flash an error or a default's figure; the field's change event, on leaving it, asks in
    full. A name not in the catalogue is not looked up on the Hub mid-typing either."""
    name = request.headers.get("X-Mid-Edit", "")
    if name not in form.fields:
        return False
    if not str(query.get(name, "")).strip():
        return True
    if not form.is_valid():
        return name in form.errors
    if name == "model" and form.cleaned_data.get("source") in {"", None, "preset"}:
        return catalogue.resolve(form.cleaned_data["model"]).preset is None
    return False


def _resolve_model(
    form: CalculatorForm, catalogue: CatalogueSnapshot, request: HttpRequest | None = None
) -> tuple[dict[str, Any] | ConfigModel | None, dict[str, Any]]:
    resolved = resolve_form_model(form, catalogue, request)
    extra: dict[str, Any] = {}
    if resolved.preset is not None:
        extra["preset"] = resolved.preset
        if resolved.dated:
            extra["preset_note"] = dated_release_note(form.cleaned_data["model"], resolved.preset)
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
        context.update(_calculate(form, catalogue_for(request), part="more", request=request))
        # The first view left a slot for the API route (_result_summary.jinja).
        context["api_route_out_of_band"] = bool(request.htmx)
    return render(request, "calculator/_more.jinja", context, using="jinja2")


def _calculate(
    form: CalculatorForm,
    catalogue: CatalogueSnapshot,
    *,
    part: str = "all",
    request: HttpRequest | None = None,
) -> dict[str, Any]:
    """The result for a valid form: ``part`` is "first" (the breakdown and verdict; the rest
    is loaded after), "more" (only the advice and the GPU list) or "all"."""
    model, context = _resolve_model(form, catalogue, request)
    if model is None:
        return context
    vram = form.cleaned_data.get("vram")
    gpu: Card | None = (
        own_card(vram)
        if vram
        else None
        if form.cleaned_data.get("gpu") == forms_module.NO_GPU
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
    except ArithmeticError as error:
        # The bounds (estimator.bounds) are meant to make this unreachable; should an input
        # still overflow, it gets a message, and the log says which.
        logger.exception("estimate failed on bounded input")
        attach_estimator_error(form, error)
        return context
    context.update(calculation.result_context(first_view=part != "more"))
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


def unavailable(request: HttpRequest, message: Any, *, retry_after: int = 30) -> HttpResponse:
    """503 for a service the request needs that did not answer: JSON under the API, a short
    page elsewhere; ``Retry-After`` says when to try again."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {"errors": [{"field": "", "message": str(message)}]}, status=503
        )
    else:
        response = HttpResponse(
            f"<!doctype html><title>503</title><p>{escape(message)}</p>",
            status=503,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: an unreachable database is an outage (503, quickly, JSON under the API),
    not a bug; anything else is Django's plain 500."""
    error = sys.exc_info()[1]
    # OperationalError and InterfaceError are the connection's failures (refused, timed out,
    # dropped, a locked SQLite file); a ProgrammingError or DataError is a bug: a 500.
    if isinstance(error, OperationalError | InterfaceError):
        return unavailable(
            request, _("The calculator's database is not answering. Try again in a minute.")
        )
    return django_server_error(request)


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
        context.update(_calculate(form, catalogue_for(request), request=request))
    try:
        within = within_rate(request, "save", settings.SAVED_RESULT_RATE_PER_HOUR, 3600)
    except ratelimit.RateLimitUnavailable:
        within = None
    if within is None or not within:
        # The whole page again, result included, with the reason above it: nothing is lost.
        notice = (
            _(
                "You have saved many links in the last hour; this one was not saved. Try again in an hour — the result below is unchanged and its address can be copied from the address bar."
            )
            if within is False
            else _(
                "Links cannot be saved right now (the server's storage did not answer). Try again in a minute — the result below is unchanged and its address can be copied from the address bar."
            )
        )
        return _not_saved(request, context, query, notice, status=429 if within is False else 503)
    if "result" not in context:
        return HttpResponseBadRequest(_("This result cannot be saved: fix the form first."))
    try:
        saved = saved_result_create(
            query=query, calculation=context["calculation"], owner=owner_key(request)
        )
    except StorageFull:
        notice = _(
            "The server's storage for saved links is full; this one was not saved. The result below is unchanged and its address can be copied from the address bar."
        )
        return _not_saved(request, context, query, notice, status=503)
    return redirect("calculator:saved", saved_id=saved.id)


def _not_saved(
    request: HttpRequest, context: dict[str, Any], query: str, notice: Any, *, status: int
) -> HttpResponse:
    context["query"] = permalink_for(QueryDict(query), store_config=False, request=request)
    context["notice"] = notice
    response = render(request, "calculator/index.html", context, status=status)
    response["Retry-After"] = "3600" if status == 429 else "60"
    return response


@require_GET
def saved(request: HttpRequest, saved_id: str) -> HttpResponse:
    """A saved link: the result as the live page showed it when it was saved, rendered by the
    live page's code from the stored figures (``calculator.result.snapshots``), and its exports."""
    snapshot = get_object_or_404(SavedResult, pk=saved_id)
    with fragment_language():
        return _saved(request, snapshot)


def _saved(request: HttpRequest, snapshot: SavedResult) -> HttpResponse:
    context: dict[str, Any] = {
        "snapshot": snapshot,
        # The links in the result (as on the live page) start from the saved permalink.
        "query": QueryDict(snapshot.query),
        "preset_changed": preset_changed(snapshot),
    }
    calculation = saved_calculation(snapshot=snapshot)
    if calculation is None:
        # Stored by a version whose request or result this one cannot read: the page says so
        # and links to the calculator, which recomputes it.
        return render(request, "calculator/saved.html", context)
    context.update(calculation.result_context())
    context["inputs"] = calculation.inputs
    export = request.GET.get("format")
    if export in {"json", "md"}:
        link = request.build_absolute_uri(request.path)
        if export == "md":
            return HttpResponse(
                calculation.markdown(link=link), content_type="text/markdown; charset=utf-8"
            )
        payload = calculation.payload(permalink=link)
        payload["saved_at"] = snapshot.created_at.isoformat()
        response: HttpResponse = JsonResponse(payload)
        response["Content-Disposition"] = 'attachment; filename="vram-estimate.json"'
        return response
    return render(request, "calculator/saved.html", context)


@require_GET
def suggest(request: HttpRequest) -> HttpResponse:
    text = request.GET.get("model", "")[:200]
    return render(
        request, "calculator/_suggestions.html", {"suggestions": preset_suggest(text=text)}
    )


@require_GET
def fits(request: HtmxHttpRequest) -> HttpResponse:
    """The honest 'what fits in my VRAM' table, and every catalogue model that fits your GPU.

    Each setting takes hundreds of estimator searches, so the rendered page is cached under
    its validated settings (any spelling of the same settings, any unknown key, finds it), the
    searches are memoised per catalogue version in each process, and a client may miss both
    only ``FITS_RATE_PER_MINUTE`` times a minute."""
    form = FitsForm(_fits_data(request.GET))
    if not form.is_valid():
        return render(request, "calculator/fits.html", {"form": form, "gpus": gpu_list()})
    settings_read = {
        key: value for key, value in form.cleaned_data.items() if value not in ("", None)
    }
    canonical = QueryDict(mutable=True)
    for key, value in settings_read.items():
        canonical[key] = _canonical_text(value)
    request.permalink_path = _path_with(request.path, canonical)  # type: ignore[attr-defined]
    key = page_cache_key(
        request,
        inputs=[(name, canonical.getlist(name)) for name in canonical],
        partial=False,
        version=catalogue_for(request).version or "",
    )
    cached = page_cache_get(key)
    if cached is not None:
        return HttpResponse(cached)
    try:
        within = within_rate(request, "fits", settings.FITS_RATE_PER_MINUTE, 60)
    except ratelimit.RateLimitUnavailable:
        within = True  # a read: served without the limit while its store is down
    if not within:
        return _fits_limited(request)
    # Rebound to the canonical values, so the cached page shows the same inputs to everyone.
    response = _fits(request, FitsForm(_fits_data(canonical)), catalogue_for(request))
    if response.status_code == 200 and "no-store" not in response.get("Cache-Control", ""):
        page_cache_set(key, response.content, RESULT_CACHE_SECONDS)
    return response


def _canonical_text(value: Any) -> str:
    """One spelling per value: 24 for 24, 24.0 and 024; 23.5 for 23.50."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _fits_data(query: QueryDict) -> QueryDict:
    data = QueryDict(mutable=True)
    for key, value in FitsForm.DEFAULTS.items():
        data[key] = str(value)
    for key in query:
        if key in FitsForm.base_fields:
            data.setlist(key, query.getlist(key))
    return data


def _fits_limited(request: HttpRequest) -> HttpResponse:
    message = _(
        "You have asked for many different settings of this page in the last minute. Try again in a minute."
    )
    response = HttpResponse(
        f"<!doctype html><title>429</title><p>{escape(message)}</p>",
        status=429,
        content_type="text/html; charset=utf-8",
    )
    response["Retry-After"] = "60"
    return response


def _fits(request: HttpRequest, form: FitsForm, catalogue: CatalogueSnapshot) -> HttpResponse:
    context: dict[str, Any] = {"form": form, "gpus": catalogue.gpus}
    if not form.is_valid():
        return render(request, "calculator/fits.html", context)
    c = form.cleaned_data
    workload = reverse.Workload(
        mode=c["mode"],
        seq_len=c["seq"],
        batch_size=c["batch"],
        runtime=c["runtime"],
        training_stack=c.get("stack") or "hf_trainer",
        checkpointing=c.get("ckpt") == "on",
    )
    presets = catalogue.presets()
    context["workload"] = workload
    context["mode_label"] = dict(FITS_MODE_CHOICES)[workload.mode]
    context["stack_label"] = dict(STACK_CHOICES)[workload.training_stack]
    context["precisions"] = workload.precisions
    context["large_quality_loss"] = reverse.LARGE_QUALITY_LOSS
    try:
        context["table"] = catalogue.derived(
            ("tier_table", workload), lambda: reverse.tier_table(workload, presets)
        )
        gpu = next((g for g in catalogue.gpus if g.slug == (c.get("gpu") or "")), None)
        usable = (
            gpu.usable_bytes
            if gpu
            else (reverse.tier_usable_bytes(c["gb"]) if c.get("gb") else None)
        )
        if usable:
            speed_gpu = gpu_performance(gpu=gpu, count=c["count"]) if gpu else None
            # A catalogue GPU: only the formats the runtime can use on it (vLLM has no kernel
            # for some quantizations on some cards, and no GPU backend on Apple's).
            formats = (
                reverse.runnable_formats(workload, vendor=gpu.vendor, fp8_support=gpu.fp8_support)
                if gpu
                else workload.precisions
            )
            models = catalogue.derived(
                ("models_that_fit", workload, usable, c["count"], gpu.slug if gpu else None),
                lambda: reverse.models_that_fit(
                    workload, presets, usable, c["count"], speed_gpu=speed_gpu, formats=formats
                ),
            )
            ram_gb = c.get("ram")
            ram = host_ram_bytes(ram_gb) if ram_gb else None
            whole = {fit.preset.pk: fit.precision for fit in models}
            in_ram = catalogue.derived(
                ("experts_in_ram", workload, usable, c["count"], gpu.slug if gpu else None, ram),
                lambda: reverse.models_with_experts_in_ram(
                    workload,
                    presets,
                    usable,
                    c["count"],
                    ram_bytes=ram,
                    speed_gpu=speed_gpu,
                    whole=whole,
                ),
            )
            context["own"] = {
                "experts_in_ram": in_ram,
                "ram_gb": ram_gb,
                "ram_text": _canonical_text(ram_gb) if ram_gb else "",
                "gpu": gpu,
                "gb": c.get("gb"),
                "count": c["count"],
                "usable_bytes": usable,
                "models": models,
                "speed": speed_gpu is not None,
                "runs": bool(formats),
                "left_out": [p for p in workload.precisions if p not in formats],
            }
    except (ConfigError, PydanticValidationError) as error:
        # A setting the searches cannot express (the reverse module keeps its probes within
        # the request's bounds; this is the last line, a message rather than a 500).
        form.add_error(None, _("These settings cannot be computed: %(reason)s") % {"reason": error})
        context.pop("table", None)
        context.pop("workload", None)
        response = render(request, "calculator/fits.html", context)
        response["Cache-Control"] = "no-store"
        return response
    return render(request, "calculator/fits.html", context)

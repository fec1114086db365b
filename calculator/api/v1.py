"""The public JSON API (django-ninja): the page's estimator over HTTP, described by OpenAPI 3.

Schemas are the estimator's own pydantic models, so the served description and the code cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from csp.decorators import csp_exempt
from django import forms
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, QueryDict
from ninja import Field, NinjaAPI, Query, Schema, Status
from ninja.errors import HttpError, ValidationError
from pydantic import BaseModel, ConfigDict, Discriminator, Tag, model_validator
from pydantic import ValidationError as PydanticValidationError

from calculator.catalogue.hub import BeforeFetch, HubError, hub_preset, stored_weight_bytes
from calculator.catalogue.limits import hub_import_allowed
from calculator.catalogue.models import ModelPreset, PresetOrigin, gpu_figure
from calculator.catalogue.selectors import gpu_list, preset_description, preset_resolve
from calculator.estimator import (
    ConfigError,
    ConfigModel,
    CustomModel,
    EstimateRequest,
    EstimateResult,
)
from calculator.estimator.bounds import MAX_SEQ_LEN
from calculator.estimator.runtimes.llama_cpp import MAX_DEVICES
from calculator.estimator.schemas import model_kind
from calculator.estimator.speed import SpeedResult
from calculator.inputs.forms import DEFAULTS, CalculatorForm
from calculator.result.calculation import Calculation, Card, own_card, request_on_card
from calculator.result.presenters import cached_estimate

api = NinjaAPI(
    title="LLM GPU memory calculator API",
    version="1",
    description=(
        "How much GPU memory a model needs for inference, fine-tuning (full, LoRA, QLoRA) or "
        "training, per GPU, with a breakdown by component. Sizes are integer bytes."
    ),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
    # The interactive docs page is Swagger UI (inline bootstrap script, assets from its CDN):
    # the only page exempt from the site's Content-Security-Policy.
    docs_decorator=csp_exempt(),
)


class PresetModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    # No NUL character in a name, a repository id or a slug: PostgreSQL text cannot hold one, so
    # it is refused here (422) rather than by the database (500).
    preset: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00]*$",
        description="A catalogue slug or alias, e.g. 'qwen2-7b'.",
    )


class HubModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    hub: str = Field(
        min_length=1,
        max_length=300,
        pattern=r"^[^\x00]*$",
        description="A Hugging Face Hub model repository id ('microsoft/phi-2') or its URL; "
        "fetched once from the Hub (HF_ENDPOINT) and kept as an imported preset.",
    )


def _api_model_kind(value: Any) -> str:
    if isinstance(value, HubModel) or (isinstance(value, dict) and "hub" in value):
        return "hub"
    return model_kind(value)


class ApiEstimateRequest(EstimateRequest):
    """The estimator's request; ``model`` may also name a catalogue preset or a Hub repository."""

    model: Annotated[  # type: ignore[assignment]
        Annotated[ConfigModel, Tag("config")]
        | Annotated[CustomModel, Tag("custom")]
        | Annotated[PresetModel, Tag("preset")]
        | Annotated[HubModel, Tag("hub")],
        Discriminator(_api_model_kind),
    ]
    seq_len: int = Field(
        default=2048,
        ge=1,
        le=MAX_SEQ_LEN,
        description="Tokens per sequence. With the vllm runtime it is vLLM's --max-model-len, as "
        "on the page, unless vllm.max_model_len is given; without either, vLLM's own default "
        "(the model's context window).",
    )
    gpu: str | None = Field(
        default=None,
        max_length=100,
        pattern=r"^[^\x00]*$",
        description="A GPU slug from /gpus for a fit verdict (and, for the vllm runtime, the "
        "card whose memory vLLM divides).",
    )

    gpus: list[Annotated[str, Field(max_length=100, pattern=r"^[^\x00]*$")]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_DEVICES,
        description="The GPUs of one machine by slug, in device order, instead of gpu and "
        "num_gpus: the llama_cpp runtime splits the layers over them by their memory, as "
        "llama.cpp splits by free memory (3090 + 3060 counts); other runtimes take one card "
        "several times.",
    )

    ram_gb: float | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        description="The machine's system RAM in GB as memory is sold (64 = 64 GiB, as the "
        "page reads it), checked against what offloading or llama.cpp keeps there (host_verdict).",
    )

    @model_validator(mode="after")
    def _vllm_knows_gpu_memory(self) -> ApiEstimateRequest:
        # Here the GPU may also come from ``gpu``; checked once the card is looked up.
        return self

    @model_validator(mode="after")
    def _one_way_to_name_the_gpus(self) -> ApiEstimateRequest:
        if self.gpus is None:
            return self
        if self.gpu is not None:
            raise ValueError("give gpu (with num_gpus) or gpus, not both")
        if "num_gpus" in self.model_fields_set and self.num_gpus != len(self.gpus):
            raise ValueError(f"num_gpus ({self.num_gpus}) differs from the {len(self.gpus)} gpus")
        if len(set(self.gpus)) > 1 and self.runtime != "llama_cpp":
            raise ValueError(
                "different GPUs in one machine are modelled for the llama_cpp runtime only; "
                "give one card with num_gpus"
            )
        return self


class Verdict(Schema):
    gpu: str | None = Field(description="The GPU slug; null for a memory amount (vram).")
    gpu_name: str
    usable_bytes: int = Field(description="Memory the card exposes to programs.")
    fits: bool = Field(description="The GPU alone: whether its part fits the card.")
    headroom_bytes: int = Field(description="Usable minus total; negative when it does not fit.")
    runs: bool = Field(
        description="The answer for the whole setup: the GPU's part fits the card and, with "
        "ram_gb, what is kept in system RAM (host_verdict) fits the machine."
    )
    fit_state: Literal["fits", "gpu_short", "ram_short", "gpu_and_ram_short"] = Field(
        description="Which memory is short when it does not run: the GPU's, the machine's RAM, "
        "or both; 'fits' when it runs."
    )


class HostVerdict(Schema):
    have_bytes: int = Field(
        description="The machine's RAM as given, GB read as GiB (a 64 GB kit holds 64 GiB)."
    )
    need_bytes: int = Field(description="host_bytes × the GPUs sharing one machine (up to 8).")
    fits: bool
    short_bytes: int


class ModelEcho(Schema):
    name: str = Field(description="The model the numbers are for, as the page names it.")
    preset: str | None = Field(description="The catalogue slug, when a preset matched.")
    hf_repo: str | None = Field(description="The model's Hugging Face repository, if known.")
    model_type: str = Field(description="The config's model_type ('custom' for a shape).")


class HubOut(Schema):
    repo_id: str
    revision: str = Field(description="The commit whose config.json was read.")
    reviewed: bool = Field(description="Whether an admin has reviewed the imported preset.")
    params_stored: int | None = Field(
        description="Tensor elements in the checkpoint (the Hub's safetensors metadata); packed "
        "elements for a pre-quantized checkpoint."
    )
    dtypes: dict[str, int] = Field(description="Tensor elements per stored safetensors dtype.")
    stored_weight_bytes: int | None = Field(
        description="What the checkpoint's tensors occupy as stored (elements × dtype size)."
    )


class ApiEstimateResponse(EstimateResult):
    preset: str | None = Field(default=None, description="The preset slug used, if any.")
    model: ModelEcho = Field(description="The model matched.")
    inputs: dict[str, Any] = Field(
        description="The request as a body for POST /api/v1/estimate that gives this result "
        "again: every input as the estimator read it (defaults filled in), the model as this "
        'API names it ({"preset": slug}, {"hub": repo} for an unreviewed import, else '
        "the shape or config), gpu (null for a memory size) and ram_gb as given."
    )
    verdict: Verdict | None = None
    hub: HubOut | None = Field(
        default=None, description="For a model imported from the Hugging Face Hub."
    )
    speed: SpeedResult | None = Field(
        default=None,
        description="Tokens per second, time to first token and training time on the chosen "
        "catalogue GPU(s), for a setup that runs (verdict.runs); null otherwise, "
        "speed_unavailable says why. A roofline per phase with fitted efficiencies.",
    )
    speed_unavailable: (
        Literal["no_catalogue_gpu", "gpu_short", "ram_short", "gpu_and_ram_short"] | None
    ) = Field(
        default=None,
        description="Why speed is null: no catalogue GPU was chosen (a memory size alone has "
        "no speed), or the setup does not run (verdict.fit_state).",
    )
    host_verdict: HostVerdict | None = Field(
        default=None, description="With ram_gb: the machine's RAM against what is kept there."
    )
    commands: dict[str, str] = Field(
        default_factory=dict,
        description="Runtime llama_cpp or vllm: the command lines (llama-server, an Ollama "
        "Modelfile, vllm serve) that run the model with the estimated settings.",
    )
    llama_fit: LlamaFitOut | None = Field(
        default=None,
        description="Runtime llama_cpp with a GPU: what llama.cpp's --fit (on by default) "
        "would set on the chosen cards, experts in system RAM included.",
    )


class FitDeviceOut(Schema):
    name: str = Field(description="CUDA0, CUDA1, …")
    free_bytes: int = Field(description="The card's memory less its CUDA context.")
    used_bytes: int = Field(description="Its model, KV, RS and compute buffers as --fit sets them.")
    layers: int = Field(description="Layer slots it holds, the output layer counting as one.")
    partial_layers: int = Field(description="Of its layers, those with experts in system RAM.")


class LlamaFitOut(Schema):
    placement: Literal[
        "all_on_gpu", "experts_in_ram", "layers_on_cpu", "ram_short", "gpu_short"
    ] = Field(
        description="The answer: every tensor on the GPU(s); every layer there with the routed "
        "experts of some in system RAM; some layers on the CPU; the RAM (ram_gb) too small for "
        "what stays there; or a GPU short of its margin even so."
    )
    status: Literal["unchanged", "context", "fitted", "refused"] = Field(
        description="What --fit does with the request's own settings: keeps them, shortens the "
        "context, moves layers or experts, or refuses (the user set -ngl, -ts or overrides); "
        "for refused the rest describes what it would choose without them."
    )
    reason: Literal["n_gpu_layers", "tensor_split", "overrides"] | None
    shown_status: Literal["unchanged", "context", "fitted", "refused"]
    fits: bool = Field(description="Every GPU keeps --fit-target (1 GiB) free.")
    command: str = Field(description="The llama-server command with --fit's choice spelled out.")
    devices: list[FitDeviceOut]
    margin_bytes: int
    experts_in_ram: int = Field(description="Layers whose routed experts stay in system RAM.")
    n_gpu_layers: int | None
    all_layers: int
    host_bytes: int = Field(description="System RAM the placement needs.")
    have_bytes: int | None
    ram_short: bool
    tokens_per_s: float | None = Field(description="Generation speed of one sequence.")


class ErrorItem(Schema):
    field: str = Field(description="Dotted path of the offending field ('' for the whole body).")
    message: str


class ErrorResponse(Schema):
    errors: list[ErrorItem]


class ModelOut(Schema):
    slug: str
    display_name: str
    family: str
    hf_repo: str
    params_total: int
    num_layers: int
    num_kv_heads: int
    max_context: int | None
    aliases: list[str]


class ModelPage(Schema):
    count: int
    page: int
    page_size: int
    results: list[ModelOut]


class GpuOut(Schema):
    slug: str
    name: str
    vendor: str
    memory_gb: float
    usable_bytes: int
    bandwidth_gb_s: float | None
    bf16_tflops_dense: float | None
    fp8_support: bool
    unified_memory: bool


def _errors(status: int, items: list[tuple[str, str]]) -> Status[dict[str, Any]]:
    return Status(status, {"errors": [{"field": f, "message": m} for f, m in items]})


# The tags of the ``model`` unions: pydantic puts the one it chose in an error's location
# (model → custom → params_billion), though no request has such a key.
MODEL_TAGS = frozenset({"config", "custom", "preset", "hub"})


def field_path(location: Sequence[int | str]) -> str:
    """The dotted path, in the request body, of what a pydantic error is about: the key the
    client sent ("model.params_billion"), not pydantic's route to it ("model.custom.…").
    Clients read these paths back: schemathesis's error feedback took "model.custom" for a
    required key of ``model`` and could no longer generate any body."""
    parts = [str(part) for part in location]
    if len(parts) > 1 and parts[0] == "model" and parts[1] in MODEL_TAGS:
        del parts[1]
    return ".".join(parts)


def _pydantic_errors(error: PydanticValidationError) -> Status[dict[str, Any]]:
    return _errors(422, [(field_path(e["loc"]), str(e["msg"])) for e in error.errors()])


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    items = []
    for error in exc.errors:
        location = list(error.get("loc", ()))
        # django-ninja's prefix: where the value came from and the view's parameter name.
        while location and location[0] in {"body", "payload"}:
            location.pop(0)
        message = str(error.get("msg", "invalid"))
        items.append({"field": field_path(location), "message": message})
    return api.create_response(request, {"errors": items}, status=422)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return api.create_response(
        request, {"errors": [{"field": "", "message": str(exc)}]}, status=exc.status_code
    )


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return api.create_response(
        request, {"errors": [{"field": "", "message": "Request body too large."}]}, status=413
    )


def api_card(gpu_slug: str | None, vram_gb: float | None = None) -> Card | None:
    if vram_gb:
        return own_card(vram_gb)
    if not gpu_slug:
        return None
    card = gpu_list().filter(slug=gpu_slug).first()
    if card is None:
        raise HttpError(404, f"No GPU with slug {gpu_slug!r}; see /api/v1/gpus.")
    return card


def api_cards(payload: ApiEstimateRequest) -> tuple[Card | None, list[Card]]:
    """The body's card (``gpu``), or its machine's cards (``gpus``), the first as the card.
    Raises ``HttpError`` (404) for a slug the catalogue lacks."""
    if payload.gpus:
        cards = [api_card(slug) for slug in payload.gpus]
        return cards[0], [card for card in cards if card is not None]
    return api_card(payload.gpu), []


def on_cards(fields: dict[str, Any], cards: Sequence[Card]) -> dict[str, Any]:
    """A body's fields on its machine's cards (``gpus``): their count, and for llama.cpp the
    memory of each, which it splits the layers by unless ``tensor_split`` says otherwise."""
    if not cards:
        return fields
    fields = {**fields, "num_gpus": len(cards)}
    if fields.get("runtime") == "llama_cpp":
        options = dict(fields.get("llama_cpp") or {})
        if not options:
            # As llama_cpp_options reads a request without options: batch slots of seq_len.
            batch = fields.get("batch_size") or 1
            options = {"n_ctx": (fields.get("seq_len") or 1) * batch, "n_parallel": batch}
        if options.get("device_memory_bytes") is None:
            options["device_memory_bytes"] = [card.usable_bytes for card in cards]
        fields["llama_cpp"] = options
    return fields


def binding_card(request: EstimateRequest, card: Card | None, cards: Sequence[Card]) -> Card | None:
    """The card a verdict is for: with several different cards under llama.cpp, the one whose
    GPU has the least room left (``LlamaCppResult.binding_device``)."""
    if len(cards) < 2 or request.runtime != "llama_cpp":
        return card
    loaded = cached_estimate(request).llama_cpp
    if loaded is None or len(loaded.devices) != len(cards):
        return card
    binding = loaded.binding_device([gpu.usable_bytes for gpu in cards])
    return cards[loaded.devices.index(binding)] if binding is not None else card


def api_request_resolve(
    payload: ApiEstimateRequest,
    card: Card | None,
    *,
    before_fetch: BeforeFetch | None = None,
    cards: Sequence[Card] = (),
) -> tuple[EstimateRequest, ModelPreset | None]:
    """The estimator's request for an API body (also what ``manage.py estimate`` reads) on
    ``card``, and the preset it names; ``before_fetch`` runs before a Hub import is fetched.
    Raises ``HttpError`` (404) for a preset name nothing matches, ``HubError`` for a failed
    Hub look-up."""
    preset = None
    fields = on_cards(payload.model_dump(exclude={"gpu", "gpus", "model", "ram_gb"}), cards)
    if "seq_len" not in payload.model_fields_set:
        del fields["seq_len"]  # its default: vLLM's context is then the model's window
    if isinstance(payload.model, HubModel):
        preset = hub_preset(
            text=payload.model.hub,
            catalogue=lambda text: preset_resolve(text=text).preset,
            before_fetch=before_fetch,
        )
        model: dict[str, Any] | ConfigModel = preset_description(preset=preset)
    elif isinstance(payload.model, PresetModel):
        match = preset_resolve(text=payload.model.preset)
        if match.preset is None:
            raise HttpError(404, _not_found(payload.model.preset, match.suggestions))
        preset = match.preset
        model = preset_description(preset=preset)
    else:
        model = payload.model.model_dump(exclude_none=True)
    return request_on_card({**fields, "model": model}, card), preset


def _not_found(text: str, suggestions: Sequence[ModelPreset]) -> str:
    """The 404 message for a model name no preset matches, with the closest slugs."""
    names = ", ".join(preset.slug for preset in suggestions[:5])
    hint = f" Closest: {names}." if names else ""
    return f"No preset matches {text!r}.{hint}"


def _respond(
    request: EstimateRequest,
    preset: ModelPreset | None,
    card: Card | None,
    *,
    host_ram_gb: float | None = None,
) -> dict[str, Any]:
    body = Calculation(request, gpu=card, preset=preset, host_ram_gb=host_ram_gb).payload()
    body["preset"] = preset.slug if preset else None
    body["hub"] = _hub_summary(preset) if preset and preset.origin == PresetOrigin.HUB else None
    return body


def _hub_summary(preset: ModelPreset) -> dict[str, Any]:
    return {
        "repo_id": preset.hf_repo,
        "revision": preset.hub_revision,
        "reviewed": preset.reviewed,
        "params_stored": preset.hub_params_total,
        "dtypes": preset.hub_dtypes or {},
        "stored_weight_bytes": stored_weight_bytes(preset.hub_dtypes or {}),
    }


# A Hub look-up that fails: the repository's fault (4xx as for any bad model), or the Hub's
# (424 Failed Dependency: the request was fine, the Hub it depends on did not answer).
HUB_ERROR_STATUS = {
    "invalid": 422,
    "malformed": 422,
    "missing": 404,
    "withdrawn": 404,
    "gated": 403,
    "offline": 424,
    "limited": 429,
    "unavailable": 503,
}


def _hub_error(error: HubError, field: str) -> Status[dict[str, Any]]:
    return _errors(HUB_ERROR_STATUS[error.kind], [(field, error.message)])


ESTIMATE_RESPONSES = {
    200: ApiEstimateResponse,
    400: ErrorResponse,
    403: ErrorResponse,
    404: ErrorResponse,
    413: ErrorResponse,
    422: ErrorResponse,
    424: ErrorResponse,
    429: ErrorResponse,
    503: ErrorResponse,
}


@api.post("/estimate", response=ESTIMATE_RESPONSES, summary="Estimate memory for a request")
def estimate_post(request: HttpRequest, payload: ApiEstimateRequest) -> Any:
    try:
        card, cards = api_cards(payload)
    except HttpError as error:
        return _errors(error.status_code, [("gpus" if payload.gpus else "gpu", str(error))])
    try:
        estimate_request, preset = api_request_resolve(
            payload, card, before_fetch=hub_import_allowed(request), cards=cards
        )
        card = binding_card(estimate_request, card, cards)
        return _respond(estimate_request, preset, card, host_ram_gb=payload.ram_gb)
    except HubError as error:
        return _hub_error(error, "model.hub")
    except HttpError as error:
        return _errors(error.status_code, [("model", str(error))])
    except ConfigError as error:
        return _errors(422, [(config_error_field(payload, error), str(error))])
    except PydanticValidationError as error:
        return _pydantic_errors(error)


def config_error_field(payload: ApiEstimateRequest, error: ConfigError) -> str:
    """Where in the body a ``ConfigError`` points: a request key (``pipeline_parallel``) as it
    is, a key of the posted config under ``model.config``, a custom shape's key under
    ``model``. A preset's or a Hub model's config is the catalogue's: ``model``."""
    field = error.field
    if field in ApiEstimateRequest.model_fields:
        return field
    if isinstance(payload.model, ConfigModel):
        return f"model.config.{field}" if field else "model.config"
    if isinstance(payload.model, CustomModel) and field in CustomModel.model_fields:
        return f"model.{field}"
    return "model"


def _refuses_empty(field: forms.Field) -> bool:
    try:
        field.clean([""] if isinstance(field, forms.MultipleChoiceField) else "")
    except forms.ValidationError:
        return True
    return False


# Permalink keys whose empty value the page refuses ("This field is required."), and ``model``,
# which the form refuses empty when a catalogue model is asked for. The API documents every key
# as optional with the page's defaults, so for these an empty value means the default; keys
# whose empty value means something of its own (gpu: none, kv: the compute dtype, ngl: all
# layers) keep it. The page itself still refuses an emptied field: its visitor cleared it.
EMPTY_MEANS_DEFAULT = frozenset(
    {"model"}
    | {name for name, field in CalculatorForm.base_fields.items() if _refuses_empty(field)}
)


def _without_empty_defaults(query: QueryDict) -> QueryDict:
    kept = query.copy()
    for key in EMPTY_MEANS_DEFAULT:
        if key in kept and not any(value.strip() for value in kept.getlist(key)):
            del kept[key]
    return kept


class PermalinkQuery(Schema):
    """The calculator page's query string; every key is optional (defaults as on the page)."""

    source: str | None = Field(default=None, description="preset, custom or config.")
    model: str | None = Field(default=None, description="A model name as people type it.")
    params: str | None = Field(default=None, description="Custom model: parameters (billions).")
    layers: str | None = None
    hidden: str | None = None
    heads: str | None = None
    kv_heads: str | None = None
    head_dim: str | None = None
    inter: str | None = None
    vocab: str | None = None
    experts: str | None = None
    active_experts: str | None = None
    config: str | None = Field(default=None, description="A pasted config.json.")
    mode: str | None = Field(
        default=None, description="inference, full_finetune, lora, qlora, pretrain."
    )
    precision: str | None = None
    mixed: str | None = None
    kv: str | None = Field(default=None, description="KV-cache precision.")
    optimizer: str | None = None
    batch: str | None = None
    seq: str | None = None
    ckpt: str | None = Field(default=None, description="Gradient checkpointing ('on').")
    attn: str | None = Field(default=None, description="flash or eager.")
    lora_rank: str | None = None
    # A list, never null: the schema has no "anyOf" whose serialized negative example (an empty
    # key) reads as a valid empty item; a key sent empty is the default, as for every field.
    lora_targets: list[str] = Field(
        default_factory=list,
        description="LoRA target modules (repeat the key); all-linear for all.",
    )
    gpus: str | None = None
    zero: str | None = None
    tp: str | None = None
    gpu: str | None = Field(default=None, description="A GPU slug.")
    vram: str | None = Field(
        default=None, description="Your card's memory in GB (instead of a catalogue GPU)."
    )
    cfg: str | None = Field(default=None, description="The id of a config pasted on the page.")
    images: str | None = Field(default=None, description="Images per request (VLMs).")
    runtime: str | None = Field(default=None, description="transformers, llama_cpp or vllm.")
    gguf: str | None = Field(default=None, description="llama.cpp: GGUF file type (Q4_K_M, …).")
    ctk: str | None = Field(default=None, description="llama.cpp: K cache type (-ctk).")
    ctv: str | None = Field(default=None, description="llama.cpp: V cache type (-ctv).")
    fa: str | None = Field(default=None, description="llama.cpp: flash attention, on or off.")
    swa: str | None = Field(default=None, description="llama.cpp: --swa-full, on or off.")
    kvu: str | None = Field(
        default=None, description="llama.cpp: unified KV cache (-kvu), on or off."
    )
    ncmoe: str | None = Field(
        default=None, description="llama.cpp: --n-cpu-moe, layers whose experts stay in RAM."
    )
    cmoe: str | None = Field(default=None, description="llama.cpp: --cpu-moe, on or off.")
    ngl: str | None = Field(default=None, description="llama.cpp: GPU layers (-ngl); empty: all.")
    ubatch: str | None = Field(default=None, description="llama.cpp: micro-batch (-ub).")
    nbatch: str | None = Field(default=None, description="llama.cpp: logical batch (-b).")
    util: str | None = Field(default=None, description="vLLM: --gpu-memory-utilization.")
    max_seqs: str | None = Field(default=None, description="vLLM: --max-num-seqs.")
    batched: str | None = Field(default=None, description="vLLM: --max-num-batched-tokens.")
    quant: str | None = Field(default=None, description="vLLM: --quantization.")
    vkv: str | None = Field(default=None, description="vLLM: --kv-cache-dtype.")
    eager: str | None = Field(default=None, description="vLLM: --enforce-eager ('on').")
    block: str | None = Field(default=None, description="vLLM: --block-size.")
    prompt: str | None = Field(
        default=None, description="Speed: prompt tokens (time to first token)."
    )
    train_b: str | None = Field(default=None, description="Speed: tokens to train on, in billions.")
    price: str | None = Field(default=None, description="Speed: price per GPU-hour.")
    ram_bw: str | None = Field(default=None, description="Speed: system RAM bandwidth (GB/s).")
    ram: str | None = Field(
        default=None, description="The machine's system RAM (GB as sold: 64 = 64 GiB)."
    )
    stack: str | None = Field(default=None, description="Training stack (hf_trainer, unsloth, …).")
    opt_impl: str | None = Field(default=None, description="fused, foreach or for_loop.")
    loss: str | None = Field(default=None, description="full, chunked or fused_linear.")
    act_ckpt: str | None = Field(default=None, description="none, full or selective.")
    act_offload: str | None = Field(default=None, description="on or off.")
    opt_offload: str | None = Field(default=None, description="on or off.")
    param_offload: str | None = Field(default=None, description="on or off.")
    seq_par: str | None = Field(default=None, description="on or off.")
    pp: str | None = Field(default=None, description="Pipeline parallel stages.")
    cp: str | None = Field(default=None, description="Context parallel ranks.")
    micro: str | None = Field(default=None, description="Micro-batches per step (pipeline).")


@api.get(
    "/estimate",
    response=ESTIMATE_RESPONSES,
    summary="Estimate memory for a calculator permalink",
    description="Accepts the page's permalink query string (?model=…&mode=…) and returns the "
    "numbers the page shows.",
)
def estimate_get(request: HttpRequest, permalink: Query[PermalinkQuery]) -> Any:
    from calculator.web.views import catalogue_for, form_data, resolve_form_model

    form = CalculatorForm(form_data(_without_empty_defaults(request.GET)))
    if not form.is_valid():
        return _errors(422, [(name, str(msgs[0])) for name, msgs in form.errors.items()])
    resolved = resolve_form_model(form, catalogue_for(request), request)
    if resolved.hub_error is not None:
        return _hub_error(resolved.hub_error, "model")
    if resolved.model is None:
        return _errors(
            404, [("model", _not_found(form.cleaned_data["model"], resolved.suggestions))]
        )
    try:
        gpu_slug = form.cleaned_data.get("gpu") or None
        if gpu_slug and not gpu_list().filter(slug=gpu_slug).exists():
            gpu_slug = None
        card = api_card(gpu_slug, form.cleaned_data.get("vram"))
        if card is None and form.cleaned_data.get("runtime") == "vllm":
            card = api_card(DEFAULTS["gpu"])  # as the page does
        estimate_request = request_on_card(form.estimate_fields(resolved.model), card)
        return _respond(
            estimate_request, resolved.preset, card, host_ram_gb=form.cleaned_data.get("ram")
        )
    except ConfigError as error:
        return _errors(422, [("model", str(error))])
    except PydanticValidationError as error:
        return _pydantic_errors(error)


class ModelFilters(Schema):
    # No NUL character: PostgreSQL text cannot hold one (SQLite never complained).
    q: str = Field(
        default="",
        max_length=200,
        pattern=r"^[^\x00]*$",
        description="Search in names and aliases.",
    )
    page: int = Field(default=1, ge=1, le=10_000)
    page_size: int = Field(default=50, ge=1, le=200)


@api.get("/models", response={200: ModelPage, 422: ErrorResponse}, summary="List catalogue models")
def models(request: HttpRequest, filters: Query[ModelFilters]) -> dict[str, Any]:
    queryset = ModelPreset.objects.filter(active=True, reviewed=True).prefetch_related("aliases")
    if filters.q:
        from calculator.catalogue.models import alias_key

        key = alias_key(filters.q)
        queryset = (
            queryset.filter(aliases__key__contains=key).distinct() if key else queryset.none()
        )
    count = queryset.count()
    start = (filters.page - 1) * filters.page_size
    rows = list(queryset[start : start + filters.page_size])
    return {
        "count": count,
        "page": filters.page,
        "page_size": filters.page_size,
        "results": [
            {
                "slug": row.slug,
                "display_name": row.display_name,
                "family": row.family,
                "hf_repo": row.hf_repo,
                "params_total": row.params_total,
                "num_layers": row.num_layers,
                "num_kv_heads": row.num_kv_heads,
                "max_context": row.max_context,
                "aliases": sorted({a.alias for a in row.aliases.all()}),
            }
            for row in rows
        ],
    }


@api.get("/gpus", response=list[GpuOut], summary="List catalogue GPUs")
def gpus(request: HttpRequest) -> list[dict[str, Any]]:
    return [
        {
            "slug": gpu.slug,
            "name": gpu.name,
            "vendor": gpu.vendor,
            "memory_gb": float(gpu.memory_gb),
            "usable_bytes": gpu.usable_bytes,
            "bandwidth_gb_s": gpu_figure(gpu.bandwidth_gb_s, "bandwidth_gb_s"),
            "bf16_tflops_dense": gpu_figure(gpu.bf16_tflops_dense, "bf16_tflops_dense"),
            "fp8_support": gpu.fp8_support,
            "unified_memory": gpu.unified_memory,
        }
        for gpu in gpu_list()
    ]

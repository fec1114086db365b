"""One calculation: an estimate request, the model and the card it is checked against.

The page, the API, the exports and the CLI all read a ``Calculation``, so each runtime's numbers
(the breakdown, the verdict, the levers, the runtime's own buffers, the command that reproduces
them) are assembled once and every surface shows the same figures. Views keep only HTTP.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from calculator.catalogue.models import GpuSpec, ModelPreset
from calculator.catalogue.selectors import CatalogueSnapshot, gpu_performance
from calculator.estimator import (
    Architecture,
    ConfigModel,
    EstimateRequest,
    EstimateResult,
    resolve_architecture,
)
from calculator.estimator.checkpoint import CheckpointQuantization, checkpoint_quantization
from calculator.estimator.core import llama_cpp_layout, llama_cpp_options, vllm_options
from calculator.estimator.runtimes import (
    commands,
    concurrency_at,
    estimate_llama_cpp,
    estimate_vllm,
    fewest_cpu_moe_layers_that_fit,
    longest_context_full_offload,
    longest_max_model_len,
    most_gpu_layers_that_fit,
)
from calculator.estimator.runtimes.llama_cpp import (
    LlamaCppResult,
    gpu_slot_bytes,
    layer_split_gpu_bytes,
)
from calculator.estimator.runtimes.llama_cpp_fit import FitResult, fit_params
from calculator.estimator.runtimes.vllm import (
    VllmOptions,
    VllmResult,
    unsupported_gpu,
    weights_bytes,
)
from calculator.estimator.speed import (
    DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S,
    GPUS_PER_NODE,
    GpuPerformance,
    SpeedResult,
    estimate_speed,
    speed_series,
)
from calculator.inputs.l10n import catalogue_name
from calculator.result import presenters, reverse
from calculator.result.charts import Chart, concurrency_chart, memory_chart, throughput_chart

# Contexts at which the page lists vLLM's concurrency (up to the model's window).
CONCURRENCY_CONTEXTS = (2_048, 4_096, 8_192, 16_384, 32_768, 65_536, 131_072, 262_144, 1_048_576)
TENSOR_PARALLEL_STEPS = (1, 2, 4, 8)


@dataclass(frozen=True)
class OwnCard:
    """A card described only by its memory ("my card has 12 GB"), checked like a catalogue GPU."""

    gb: float
    name: str
    usable_bytes: int
    nominal_bytes: int
    slug: str = ""
    # The page asks for a catalogue GPU to show a speed: a memory size alone does not give one.
    memory_only: bool = True

    @property
    def local_name(self) -> str:
        # A saved link keeps the catalogue name it was saved with, in English.
        return catalogue_name(self.name)

    @property
    def display_label(self) -> str:
        return self.local_name


def own_card(gb: float) -> OwnCard:
    return OwnCard(
        gb=gb,
        name=_("your %(gb)s GB card")
        % {"gb": number_format(gb, 0 if gb == int(gb) else 1, use_l10n=True)},
        usable_bytes=reverse.tier_usable_bytes(gb),
        nominal_bytes=int(gb * (1 << 30)),
    )


Card = GpuSpec | OwnCard


def host_ram_bytes(gb: float) -> int:
    """The system RAM a visitor gave, in bytes. Memory is sold in binary units: a "64 GB" kit
    holds 64 GiB, as a card's "12GB" is 12 GiB (`own_card`), so both read the figure the same way
    and the page states both in GiB."""
    return int(gb * (1 << 30))


@dataclass(frozen=True)
class RuntimeBuffer:
    """One line the runtime prints at start-up, with our figure for it."""

    log_name: str
    gpu_bytes: int | None
    host_bytes: int | None
    explanation: Any
    value: str = ""  # a count rather than bytes (tokens, concurrency)


@dataclass(frozen=True)
class ReadyCommand:
    """A command line (or file) that reproduces the estimated settings."""

    key: str
    label: Any
    text: str


@dataclass(frozen=True)
class ApiRoute:
    """One result as a script asks for it again: the ``curl`` that posts its request body, the
    permalink's GET form of the API ("" when the link cannot hold the model), and the CLI
    command that reads the same body."""

    curl: str
    get_url: str
    cli: str


class Calculation:
    """The numbers of one request on one card, as every surface shows them."""

    def __init__(
        self,
        request: EstimateRequest,
        *,
        catalogue: CatalogueSnapshot | None = None,
        gpu: Card | None = None,
        preset: ModelPreset | None = None,
        host_ram_gb: float | None = None,
        result: EstimateResult | None = None,
    ) -> None:
        self.request = request
        self.host_ram_gb = host_ram_gb
        self.catalogue = catalogue
        self.gpu = gpu
        self.preset = preset
        # A saved snapshot passes the result it stored: it shows what was computed then.
        self.result: EstimateResult = (
            result if result is not None else presenters.cached_estimate(self.request)
        )
        self.arch: Architecture = resolve_architecture(self.request.model)

    # --- naming -------------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        if self.preset is not None:
            return str(self.preset.display_name)
        if isinstance(self.request.model, ConfigModel):
            return _("Pasted config (%(type)s)") % {"type": self.arch.model_type}
        return _("Custom model")

    @property
    def runtime(self) -> str:
        return self.request.runtime

    @property
    def model_named(self) -> bool:
        """Whether the API can name this model (a preset, a Hub import) and get the description
        it was computed from; a saved snapshot whose preset changed since says no."""
        return self.preset is not None

    @property
    def model_reference(self) -> dict[str, Any]:
        """``model`` as the API and the CLI take it: the catalogue slug (every preset is found
        by its slug), the Hub repository of an unreviewed import (the catalogue does not
        answer for one), else the shape or config itself."""
        preset = self.preset
        if preset is not None and self.model_named:
            if preset.is_unreviewed_import and preset.hf_repo:
                return {"hub": preset.hf_repo}
            return {"preset": preset.slug}
        return self.request.model.model_dump(mode="json", exclude_none=True)

    def api_request(self) -> dict[str, Any]:
        """The body of ``POST /api/v1/estimate`` (and of ``manage.py estimate --json``) that
        gives this result again: the validated request as the estimator read it, defaults
        filled in, with the model as the API names it, the catalogue GPU and the machine's RAM.
        A card given only by its memory has no slug; vLLM's share of it is in
        ``vllm.gpu_memory_bytes`` already."""
        body: dict[str, Any] = {"model": self.model_reference}
        body.update(self.request.model_dump(mode="json", exclude={"model"}))
        body["gpu"] = (self.gpu.slug or None) if self.gpu is not None else None
        body["ram_gb"] = self.host_ram_gb
        return body

    def api_route(self, *, estimate_url: str, query: str | None) -> ApiRoute:
        """The commands that ask the API and the CLI for this result. ``estimate_url`` is the
        address of ``/api/v1/estimate``, ``query`` the result's permalink query string (None:
        the permalink does not say which model, as for a pasted config left out of it)."""
        body = json.dumps(self.api_request(), indent=2, ensure_ascii=False)
        # A quoted heredoc passes the body as it is: no character in it means anything to the
        # shell, and JSON never puts the word JSON alone on a line.
        heredoc = f"<<'JSON'\n{body}\nJSON"
        curl = (
            f"curl -s -X POST {shlex.quote(estimate_url)} "
            f"-H 'Content-Type: application/json' --data-binary @- {heredoc}"
        )
        card = ""
        if isinstance(self.gpu, OwnCard) and self.gpu.memory_only:
            card = f" --vram {self.gpu.gb:g}"
        cli = f"python manage.py estimate{card} --json - {heredoc}"
        get_url = "" if query is None else f"{estimate_url}?{query}" if query else estimate_url
        return ApiRoute(curl=curl, get_url=get_url, cli=cli)

    # --- the first view: breakdown, verdict, chart -------------------------------------
    @cached_property
    def rows(self) -> list[presenters.Row]:
        return presenters.breakdown_rows(self.result, self.request, self.arch)

    @cached_property
    def verdict(self) -> presenters.Verdict | None:
        if self.gpu is None:
            return None
        return presenters.runtime_verdict(
            self.result,
            self.gpu.usable_bytes,
            self.gpu.nominal_bytes,
            block_size=self.request.vllm.block_size if self.request.vllm else 16,
        )

    @cached_property
    def run_verdict(self) -> presenters.RunVerdict | None:
        """The card and the machine's RAM together: the one answer every surface gives."""
        if self.verdict is None:
            return None
        return presenters.run_verdict(self.verdict, self.host_verdict)

    @cached_property
    def context_beyond(self) -> int | None:
        return presenters.context_warning(self.context_tokens, self.arch.max_position_embeddings)

    @property
    def context_tokens(self) -> int:
        """Tokens one sequence holds under the chosen runtime."""
        if self.result.vllm is not None:
            return self.result.vllm.max_model_len
        return self.request.seq_len

    def first_view(self) -> dict[str, Any]:
        """What the page shows at once: the breakdown, the verdict, the chart, the runtime's
        own buffers and the command that reproduces them."""
        scale = self.result.total_bytes
        context: dict[str, Any] = {
            "rows": self.rows,
            "gpu": self.gpu,
            "context_beyond": self.context_beyond,
            "runtime_buffers": self.runtime_buffers,
            "checkpoint_mismatch": self.checkpoint_mismatch,
            "speed": self.speed,
            "speed_unavailable": self.speed_unavailable,
            "run_verdict": self.run_verdict,
            "host_need_bytes": self.host_need_bytes,
            "host_components": self.host_components,
            "gpus_per_machine": self.gpus_per_machine,
            "host_verdict": self.host_verdict,
            "ready_commands": self.ready_commands,
            "cpu_only": self.cpu_only,
            "ram_bandwidth_gb_s": self.ram_bandwidth_gb_s,
            "ollama_placement": self.ollama_placement,
        }
        if self.gpu is not None:
            scale = max(scale, self.gpu.usable_bytes)
            context["verdict"] = self.verdict
            context["capacity_x"] = 1000.0 * self.gpu.usable_bytes / scale
        context["segments"] = presenters.chart_segments(self.rows, scale)
        return context

    def result_context(self, *, first_view: bool = True) -> dict[str, Any]:
        """The result's template context: the live page and a saved snapshot render it from
        here, so a snapshot shows whatever the live page shows."""
        context: dict[str, Any] = {
            "calculation": self,
            "gpu": self.gpu,
            "request_obj": self.request,
            "result": self.result,
            "arch": self.arch,
        }
        if self.preset is not None:
            context["preset"] = self.preset
        if first_view:
            context.update(self.first_view())
        return context

    @property
    def inputs(self) -> list[tuple[str, str]]:
        """Every input, as a snapshot lists it and the Markdown export repeats it."""
        return presenters.inputs_summary(
            self.request,
            gpu_name=self.gpu.local_name if self.gpu is not None else None,
            host_ram_gb=self.host_ram_gb,
        )

    # --- system RAM ---------------------------------------------------------------------
    @property
    def gpus_per_machine(self) -> int:
        """GPUs sharing one machine's RAM: all of them, up to the usual eight per node."""
        return min(self.request.num_gpus, GPUS_PER_NODE)

    @cached_property
    def host_need_bytes(self) -> int:
        """CPU RAM one machine needs for what is kept there (offload, llama.cpp host layers)."""
        return self.result.host_bytes * self.gpus_per_machine

    @cached_property
    def host_components(self) -> list[tuple[Any, int]]:
        """What one GPU's process keeps in system RAM, by component (offloaded training state),
        so the RAM's figure reads against the GPU breakdown it came from."""
        host = self.result.host_breakdown
        if self.result.llama_cpp is not None:
            return []
        labels = {
            **presenters.COMPONENT_LABELS,
            "parameters": presenters.COMPONENT_LABELS["weights"],
        }
        return [
            (labels[name], value)
            for name, value in host.model_dump().items()
            if name != "pinned" and value
        ]

    @cached_property
    def host_verdict(self) -> dict[str, Any] | None:
        """The machine's RAM against what the run keeps there, when the visitor gave it."""
        if not self.host_ram_gb or not self.host_need_bytes:
            return None
        have = host_ram_bytes(self.host_ram_gb)
        return {
            "have_bytes": have,
            "need_bytes": self.host_need_bytes,
            "fits": self.host_need_bytes <= have,
            "short_bytes": max(self.host_need_bytes - have, 0),
        }

    # --- speed -------------------------------------------------------------------------
    @cached_property
    def gpu_performance(self) -> Any:
        """The chosen catalogue GPU's bandwidth and throughput (a bare memory size has none)."""
        if not isinstance(self.gpu, GpuSpec):
            return None
        return gpu_performance(gpu=self.gpu, count=self.request.num_gpus)

    @cached_property
    def speed_unavailable(self) -> str | None:
        """Why no speed is given: no catalogue GPU to time it on, or a setup that does not run
        (its ``fit_state``): a speed for memory that is not there would be no one's speed.
        With no GPU at all the CPU's speed is timed on the RAM, so only a RAM short of the
        model stops it."""
        if self.cpu_only:
            host = self.host_verdict
            return "ram_short" if host is not None and not host["fits"] else None
        if self.gpu_performance is None:
            return "no_catalogue_gpu"
        run = self.run_verdict
        if run is not None and not run.runs:
            return run.fit_state
        return None

    @cached_property
    def ollama_placement(self) -> dict[str, Any] | None:
        """Where Ollama would put the model on several GPUs: its scheduler loads it alone on the
        one GPU whose available memory holds it within 80% (``--split-mode none``), and lets
        llama-server split it over the GPUs only when none does (ollama/ollama@fb30760
        server/sched.go ``selectLlamaServerPlacement``). Equal cards here: one of them."""
        request = self.request
        if request.runtime != "llama_cpp" or request.num_gpus < 2 or self.gpu is None:
            return None
        one_gpu = llama_cpp_options(request).model_copy(
            update={"tensor_split": None, "device_memory_bytes": None, "main_gpu": 0}
        )
        single = presenters.cached_estimate(
            presenters.with_changes(request, num_gpus=1, llama_cpp=one_gpu.model_dump())
        )
        limit = int(0.8 * self.gpu.usable_bytes)
        return {
            "single": single.total_bytes <= limit,
            "need_bytes": single.total_bytes,
            "limit_bytes": limit,
        }

    @cached_property
    def cpu_only(self) -> bool:
        """No GPU: llama.cpp with every layer on the CPU and no card chosen."""
        loaded = self.result.llama_cpp
        return self.gpu is None and loaded is not None and loaded.gpu_layers == 0

    @cached_property
    def speed(self) -> SpeedResult | None:
        """Tokens per second (and training time) on the chosen GPUs: a roofline per phase, for
        a setup that runs."""
        if self.cpu_only:
            return self._cpu_speed()
        performance = self.gpu_performance
        if performance is None or self.speed_unavailable is not None:
            return None
        request = self.request
        return estimate_speed(
            self.arch,
            request,
            self.result,
            performance,
            runtime=request.runtime,
            llama_cpp=self.result.llama_cpp,
            vllm=self.result.vllm,
            prompt_tokens=request.prompt_tokens,
            train_tokens=request.train_tokens,
            price_per_gpu_hour=request.price_per_gpu_hour,
            host_memory_bandwidth_gb_s=request.host_memory_bandwidth_gb_s,
        )

    @property
    def ram_bandwidth_gb_s(self) -> float:
        """The machine's RAM bandwidth as given, else two channels of DDR5-5600."""
        return self.request.host_memory_bandwidth_gb_s or DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S

    def _cpu_speed(self) -> SpeedResult | None:
        """Generation on the CPU alone: every weight read from system RAM for each token, at the
        machine's RAM bandwidth (``host_memory_bandwidth_gb_s``, else two channels of DDR5-5600)
        with the share of it llama.cpp's CPU layers reach (the speed model's ``host_bandwidth``).
        Prompt processing is bound by the CPU's cores, which the estimate does not know: none."""
        if self.run_verdict is not None and not self.run_verdict.runs:
            return None
        if self.speed_unavailable is not None:
            return None
        request = self.request
        bandwidth = self.ram_bandwidth_gb_s
        # The RAM stands in for the device: nothing is on a GPU, so only the host term counts.
        ram = GpuPerformance(bandwidth_gb_s=bandwidth)
        speed = estimate_speed(
            self.arch,
            request,
            self.result,
            ram,
            runtime="llama_cpp",
            llama_cpp=self.result.llama_cpp,
            host_memory_bandwidth_gb_s=bandwidth,
        )
        return speed.model_copy(
            update={
                "backend": "cpu",
                "prefill_tokens_per_s": None,
                "time_to_first_token_s": None,
                "host_slowdown": None,
            }
        )

    def charts(self) -> dict[str, Any]:
        """What a longer context costs, and for inference generation speed against batch size.

        Memory per GPU against the context length is the estimate itself at each length, so a
        point on the chart is the figure the page gives for that context. vLLM reserves its pool
        at start-up whatever the context, so its chart shows instead the requests the pool holds
        (the concurrency table's figures) and the longest context at which it starts."""
        if self.gpu is None:
            return {}
        charts: dict[str, Any] = {}
        if self.result.vllm is not None:
            charts["concurrency_chart"] = self._concurrency_chart()
        else:
            charts["memory_chart"] = memory_chart(
                self._memory_against_context(),
                usable_bytes=self.gpu.usable_bytes,
                current=(self.sequence_context, self.result.total_bytes),
            )
            if self.result.llama_cpp is not None:
                charts["chart_slots"] = llama_cpp_options(self.request).n_parallel
        performance = self.gpu_performance
        if self.speed is not None and self.request.mode == "inference":
            throughput = speed_series(
                self.arch,
                self.request,
                self.result,
                performance,
                runtime=self.request.runtime,
                llama_cpp=self.result.llama_cpp,
                vllm=self.result.vllm,
            )
            charts["speed_chart"] = throughput_chart(
                [(int(point.x), point.y) for point in throughput],
                current_batch=self.request.batch_size,
            )
        return charts

    @property
    def sequence_context(self) -> int:
        """Tokens of one sequence: llama-server splits ``-c`` evenly over its ``-np`` slots."""
        if self.result.llama_cpp is not None:
            options = llama_cpp_options(self.request)
            return max(options.n_ctx // options.n_parallel, 1)
        return self.context_tokens

    def _at_context(self, tokens: int) -> EstimateRequest:
        """The same request with sequences of ``tokens`` tokens (llama.cpp: ``-c`` = slots ×
        tokens, since it allocates the KV cache of every slot at load)."""
        changed = presenters.with_changes(self.request, seq_len=tokens)
        settings = self.request.llama_cpp
        if settings is not None:
            n_ctx = tokens * settings.n_parallel
            changed = changed.model_copy(
                update={"llama_cpp": settings.model_copy(update={"n_ctx": n_ctx})}
            )
        return changed

    def _memory_against_context(self) -> list[tuple[int, int]]:
        """(context, total bytes per GPU) at powers of two around the chosen context; a length
        the request cannot take (a bound of its settings) is left out."""
        current = self.sequence_context
        points = {current: self.result.total_bytes}
        for tokens in chart_contexts(current):
            if tokens not in points:
                total = _or_none(
                    lambda t=tokens: presenters.cached_estimate(self._at_context(t)).total_bytes
                )
                if total is not None:
                    points[tokens] = total
        return sorted(points.items())

    @cached_property
    def vllm_concurrency(self) -> list[tuple[int, float]]:
        """Requests of each context length vLLM's pool holds, up to the model's window: the
        table on the page and the points of its chart."""
        options = vllm_options(self.request)
        window = self.arch.max_position_embeddings or 1 << 20
        return [
            (tokens, concurrency_at(self.arch, options, tokens))
            for tokens in CONCURRENCY_CONTEXTS
            if tokens <= window
        ]

    @cached_property
    def vllm_longest(self) -> int:
        """The longest ``--max-model-len`` that starts (0: no room for a KV cache)."""
        return longest_max_model_len(self.arch, vllm_options(self.request))

    def _concurrency_chart(self) -> Chart | None:
        started = self.result.vllm
        assert started is not None
        points = dict(self.vllm_concurrency)
        points[started.max_model_len] = started.max_concurrency
        # Past the longest length charted, the model's window ends first: no pool limit to mark.
        longest = self.vllm_longest if self.vllm_longest <= max(points) else None
        return concurrency_chart(
            sorted(points.items()),
            current=(started.max_model_len, started.max_concurrency),
            longest=longest,
        )

    # --- the runtime's own accounting ----------------------------------------------------
    @cached_property
    def runtime_buffers(self) -> list[RuntimeBuffer]:
        if self.result.llama_cpp is not None:
            return _llama_cpp_buffers(self.result.llama_cpp)
        if self.result.vllm is not None:
            return _vllm_buffers(self.result.vllm)
        return []

    @cached_property
    def ready_commands(self) -> list[ReadyCommand]:
        """The command line that runs the model with the settings estimated here."""
        if self.runtime == "transformers":
            return []
        repo = (self.preset.hf_repo if self.preset else "") or ""
        if self.runtime == "llama_cpp":
            options = llama_cpp_options(self.request)
            gguf_file = self._gguf_file_name
            name = gguf_file.rsplit("-", 1)[0].lower()
            return [
                ReadyCommand(
                    "llama_server",
                    "llama-server",
                    commands.llama_server_command(gguf_file, options, self.request.num_gpus),
                ),
                ReadyCommand(
                    "ollama_modelfile",
                    gettext_lazy("Ollama: Modelfile"),
                    commands.ollama_modelfile(f"./{gguf_file}", options),
                ),
                ReadyCommand(
                    "ollama_run",
                    gettext_lazy("Ollama: server settings, then create and run"),
                    commands.ollama_run_command(name, options),
                ),
            ]
        return [
            ReadyCommand(
                "vllm_serve",
                "vllm serve",
                commands.vllm_serve_command(
                    repo or "<org/model>",
                    self._vllm_command_options(),
                    self.request.tensor_parallel,
                ),
            )
        ]

    @property
    def _gguf_file_name(self) -> str:
        """GGUF files live in other repositories than the checkpoint, under many names: the
        commands name a local file as GGUF repositories usually call it."""
        repo = (self.preset.hf_repo if self.preset else "") or ""
        stem = repo.rsplit("/", 1)[-1] or "model"
        return f"{stem}-{llama_cpp_options(self.request).gguf_type}.gguf"

    def _vllm_command_options(self) -> Any:
        """vLLM reads a checkpoint's own quantization_config: the flag is written only when the
        user chose one (a flag that contradicts the checkpoint stops vLLM at start)."""
        options = vllm_options(self.request)
        if self.request.vllm is not None and self.request.vllm.quantization is None:
            options = options.model_copy(update={"quantization": "none"})
        return options

    @cached_property
    def checkpoint(self) -> CheckpointQuantization | None:
        """How the published checkpoint stores its weights, when it is pre-quantized."""
        if not isinstance(self.request.model, ConfigModel):
            return None
        return checkpoint_quantization(self.request.model.config)

    @property
    def checkpoint_mismatch(self) -> CheckpointQuantization | None:
        """A pre-quantized checkpoint estimated at another precision than it is stored in (the
        transformers runtime loads it as stored)."""
        stored = self.checkpoint
        if stored is None or self.runtime != "transformers" or self.request.mode != "inference":
            return None
        if stored.precision == self.request.precision:
            return None
        return stored

    # --- the part loaded after: levers, advice, the GPU list --------------------------
    def advice(self) -> dict[str, Any]:
        if self.runtime == "llama_cpp":
            context = self._llama_cpp_advice()
        elif self.runtime == "vllm":
            context = self._vllm_advice()
        else:
            context = self._transformers_advice()
        context.update(self.charts())
        context["speed"] = self.speed
        return context

    def _transformers_advice(self) -> dict[str, Any]:
        request, result, gpu = self.request, self.result, self.gpu
        context: dict[str, Any] = {}
        max_context = self.arch.max_position_embeddings
        if gpu is not None:
            usable = gpu.usable_bytes
            # QLoRA's base weights are 4-bit NF4 by definition: no weight format to offer.
            precision = (
                None
                if request.mode == "qlora"
                else _or_none(lambda: presenters.highest_fitting_precision(request, usable))
            )
            context["levers"] = {
                # A lever a setting cannot take (a context that context parallelism cannot
                # split, say) is left out rather than guessed.
                "seq": _or_none(
                    lambda: presenters.largest_fitting(
                        request, "seq_len", usable, max_context or 1 << 22
                    )
                ),
                "batch": _or_none(
                    lambda: presenters.largest_fitting(request, "batch_size", usable, 1 << 16)
                ),
                "precision": precision,
                "precision_applies": request.mode != "qlora",
                "precision_quality": presenters.PRECISION_QUALITY.get(precision or ""),
            }
            if result.total_bytes > usable:
                # Offloads may use the system RAM the visitor gave, shared by a machine's GPUs.
                host_limit = (
                    host_ram_bytes(self.host_ram_gb) // self.gpus_per_machine
                    if self.host_ram_gb
                    else None
                )
                context["levers"]["combination"] = _or_none(
                    lambda: presenters.best_combination(
                        request, usable, max_context, host_bytes_limit=host_limit
                    )
                )
            switches = result.switches
            if switches is not None and switches.activation_checkpointing == "none":
                checkpointed = presenters.cached_estimate(
                    presenters.with_changes(request, activation_checkpointing="full")
                )
                context["levers"]["checkpointing_bytes"] = checkpointed.total_bytes
            if self.preset is not None and result.total_bytes > usable:
                context["smaller_model"] = self.smaller_model(usable)
        if self.catalogue is not None:
            smallest = min((gpu.usable_bytes for gpu in self.catalogue.gpus), default=None)
            totals = presenters.sharded_totals(request, enough_bytes=smallest)
            context["fits"] = presenters.gpu_fits(self.catalogue.gpus, totals)
        return context

    def _llama_cpp_advice(self) -> dict[str, Any]:
        options = llama_cpp_options(self.request)
        context: dict[str, Any] = {}
        # The levers search one GPU's -ngl and context; a split over several is not searched.
        if self.gpu is not None and self.request.num_gpus == 1:
            # The runtime's buffers must fit beside the CUDA context.
            room = max(self.gpu.usable_bytes - self.result.breakdown.cuda_context, 0)
            layout = llama_cpp_layout(self.request)
            layers = most_gpu_layers_that_fit(self.arch, options, room, layout=layout)
            longest = longest_context_full_offload(self.arch, options, room, layout=layout)
            # Fewer layers on the GPU leave more in RAM, so the most the GPU holds is also the
            # split that needs the least RAM: when even it needs more than the machine has, no
            # -ngl runs there.
            ram_short = None
            if layers and self.host_ram_gb:
                trial = options.model_copy(update={"n_gpu_layers": layers})
                need = estimate_llama_cpp(self.arch, trial, layout=layout).host_bytes
                have = host_ram_bytes(self.host_ram_gb)
                if need > have:
                    ram_short = {"layers": layers, "need_bytes": need, "have_bytes": have}
                    layers = 0
            context["llama_levers"] = {
                "gpu_layers": layers,
                "all_layers": self.arch.num_layers + 1,
                "n_ctx": longest,
                "seq": longest // options.n_parallel if longest else 0,
                "host_bytes": self.result.host_bytes,
                "ram_short": ram_short,
                "experts_in_ram": self._experts_in_ram(room),
            }
        fitted = self.llama_fit
        if fitted is not None:
            context["llama_fit"] = fitted
        if self.catalogue is not None:
            fits = presenters.gpu_fits(self.catalogue.gpus, self._layer_split_totals())
            context["fits"] = self._with_experts_in_ram(fits)
        return context

    @cached_property
    def llama_fit(self) -> dict[str, Any] | None:
        """What llama.cpp's ``--fit`` (on by default) lands on for the chosen GPUs, each with
        its CUDA context taken: the command, every device's buffers against its free memory,
        the RAM the rest needs and the speed. Where the user's own -ngl, -ts or overrides make
        --fit leave the settings alone, also what it would choose without them."""
        request = self.request
        if request.runtime != "llama_cpp" or self.gpu is None:
            return None
        options = llama_cpp_options(request)
        if options.n_gpu_layers == 0:
            return None
        cards = options.device_memory_bytes
        if cards is None or len(cards) != request.num_gpus:
            cards = (self.gpu.usable_bytes,) * request.num_gpus
        context_bytes = self.result.breakdown.cuda_context
        free = [max(card - context_bytes, 0) for card in cards]
        layout = llama_cpp_layout(request)
        own = fit_params(self.arch, options, free, layout=layout)
        shown = own
        if own.status == "refused":
            unset = options.model_copy(
                update={
                    "n_gpu_layers": None,
                    "tensor_split": None,
                    "n_cpu_moe": 0,
                    "cpu_moe": False,
                    "override_tensors": (),
                }
            )
            shown = fit_params(self.arch, unset, free, layout=layout)
        changed = presenters.with_changes(request, llama_cpp=shown.options.model_dump())
        estimate = presenters.cached_estimate(changed)
        loaded = estimate.llama_cpp
        have = host_ram_bytes(self.host_ram_gb) if self.host_ram_gb else None
        host = loaded.host_bytes if loaded is not None else 0
        speed = None
        if shown.fits and (have is None or host <= have):
            speed = self._fit_tokens_per_s(changed, estimate)
        gguf_file = self._gguf_file_name
        if not shown.fits:
            placement = "gpu_short"
        elif have is not None and host > have:
            placement = "ram_short"
        elif shown.experts_in_ram_layers:
            placement = "experts_in_ram"
        elif shown.options.n_gpu_layers not in (None, self.arch.num_layers + 1):
            placement = "layers_on_cpu"
        else:
            placement = "all_on_gpu"
        return {
            "placement": placement,
            "status": own.status,
            "reason": own.reason,
            "shown_status": shown.status,
            "fits": shown.fits,
            "command": commands.llama_server_command(gguf_file, shown.options, request.num_gpus),
            "devices": shown.devices,
            "margin_bytes": shown.margin_bytes,
            "experts_in_ram": shown.experts_in_ram_layers,
            "n_gpu_layers": shown.options.n_gpu_layers,
            "all_layers": self.arch.num_layers + 1,
            "host_bytes": host,
            "have_bytes": have,
            "ram_short": have is not None and host > have,
            "tokens_per_s": speed,
            "query": self._fit_query(shown),
        }

    def _fit_tokens_per_s(self, request: EstimateRequest, estimate: EstimateResult) -> float | None:
        """Decoding speed with --fit's placement on the chosen GPUs (a saved result keeps it)."""
        if self.gpu_performance is None:
            return None
        return estimate_speed(
            self.arch,
            request,
            estimate,
            self.gpu_performance,
            runtime="llama_cpp",
            llama_cpp=estimate.llama_cpp,
            host_memory_bandwidth_gb_s=request.host_memory_bandwidth_gb_s,
        ).decode_tokens_per_s

    def _fit_query(self, fitted: FitResult) -> dict[str, Any]:
        """The page's fields that reproduce ``fitted``: -ngl, -ot and -ts, the expert flags off."""
        options = fitted.options
        fields: dict[str, Any] = {"ngl": options.n_gpu_layers, "ncmoe": None, "cmoe": None}
        fields["ot"] = commands.override_tensors_text(options.override_tensors) or None
        split = options.tensor_split if self.request.num_gpus > 1 else None
        fields["ts"] = ",".join(f"{share:g}" for share in split) if split else None
        return fields

    def _with_experts_in_ram(self, fits: list[presenters.GpuGroup]) -> list[presenters.GpuGroup]:
        """The GPU list plus, for a MoE model, the cards that one of them holds with the routed
        experts of some layers in RAM (every other tensor on the GPU), right after the cards
        that hold it whole; with the machine's RAM given, only where that RAM holds the rest."""
        if not self.arch.is_moe:
            return fits
        have = host_ram_bytes(self.host_ram_gb) if self.host_ram_gb else None
        whole = {gpu.slug for group in fits if group.count == 1 for gpu in group.gpus}
        offloaded = []
        for group in fits:
            for gpu in group.gpus:
                if gpu.slug in whole or not group.runs:
                    continue
                room = gpu.usable_bytes - self.result.breakdown.cuda_context
                _layers, trial = self._cpu_moe_fit(room)
                if trial is not None and (have is None or trial.host_bytes <= have):
                    offloaded.append(gpu)
        if not offloaded:
            return fits
        place = next((i + 1 for i, group in enumerate(fits) if group.count == 1), 0)
        by_size = sorted(offloaded, key=lambda gpu: float(gpu.memory_gb))
        extra = presenters.GpuGroup(1, None, by_size, experts_in_ram=True)
        return [*fits[:place], extra, *fits[place:]]

    @cached_property
    def _cpu_moe_trials(self) -> dict[int, LlamaCppResult]:
        """llama.cpp's buffers per --n-cpu-moe, as the searches over cards make them."""
        return {}

    def _cpu_moe_fit(self, room: int) -> tuple[int | None, LlamaCppResult | None]:
        """The fewest layers with experts in RAM for ``room`` bytes of GPU, and that setup."""
        layers = fewest_cpu_moe_layers_that_fit(
            self.arch,
            llama_cpp_options(self.request),
            room,
            layout=llama_cpp_layout(self.request),
            trials=self._cpu_moe_trials,
        )
        return layers, None if layers is None else self._cpu_moe_trials[layers]

    def _experts_in_ram(self, room: int) -> dict[str, Any] | None:
        """The fewest layers whose routed experts must stay in RAM (--n-cpu-moe) for every
        other tensor to fit on the GPU, and the RAM that then holds: the answer to "a large
        MoE on a small card" (a partial -ngl leaves far more on the CPU). None for a dense
        model, or when even every expert in RAM leaves too much on the GPU."""
        layers, trial = self._cpu_moe_fit(room)
        if layers is None or trial is None:
            return None
        have = host_ram_bytes(self.host_ram_gb) if self.host_ram_gb else None
        return {
            "layers": layers,
            "of": self.arch.num_layers,
            "ram_bytes": trial.host_bytes,
            "ram_short": have is not None and trial.host_bytes > have,
            "have_bytes": have,
        }

    def _full_offload(self) -> EstimateResult:
        if self.request.llama_cpp is None or self.request.llama_cpp.n_gpu_layers is None:
            return self.result
        changed = self.request.model_copy(
            update={"llama_cpp": self.request.llama_cpp.model_copy(update={"n_gpu_layers": None})}
        )
        return presenters.cached_estimate(changed)

    def _layer_split_totals(self) -> dict[int, int]:
        """Bytes on the fullest GPU when llama.cpp splits every layer over n equal GPUs (``-sm
        layer``, its default with several GPUs), each with its CUDA context; one GPU: the full
        offload's total. The counts stop once the smallest card holds the job."""
        assert self.catalogue is not None
        full = self._full_offload()
        totals = {1: full.total_bytes}
        smallest = min((gpu.usable_bytes for gpu in self.catalogue.gpus), default=0)
        options = llama_cpp_options(self.request).model_copy(update={"n_gpu_layers": None})
        slots: list[int] | None = None
        for n in presenters.SHARDING_STEPS[1:]:
            if min(totals.values()) <= smallest:
                break
            if slots is None:
                slots = gpu_slot_bytes(self.arch, llama_cpp_layout(self.request), options)
            devices = layer_split_gpu_bytes(self.arch, options, n, slots=slots)
            totals[n] = max(devices) + full.breakdown.cuda_context
        return totals

    def _vllm_advice(self) -> dict[str, Any]:
        context: dict[str, Any] = {
            "vllm_levers": {
                "longest": self.vllm_longest,
                "concurrency": self.vllm_concurrency,
                # vLLM refuses a --max-model-len past the model's window unless told otherwise.
                "beyond": presenters.context_warning(
                    self.vllm_longest, self.arch.max_position_embeddings
                ),
            }
        }
        if self.catalogue is not None:
            context["fits"] = self._vllm_gpu_fits()
            context["fits_refused"] = self.vllm_refused
            context["vllm_quantization"] = self.vllm_quantization
        return context

    def _vllm_gpu_fits(self) -> list[presenters.GpuGroup]:
        """Catalogue GPUs by the tensor-parallel size at which vLLM starts with this model."""
        assert self.catalogue is not None
        options = vllm_options(self.request)

        def at(tp: int, gpu: GpuSpec | None = None) -> VllmOptions:
            update: dict[str, int] = {"tensor_parallel": tp}
            if gpu is not None:
                update["gpu_memory_bytes"] = gpu.usable_bytes
            return options.model_copy(update=update)

        # The weights on each GPU do not depend on the card's memory.
        weights = {tp: weights_bytes(self.arch, at(tp)) for tp in TENSOR_PARALLEL_STEPS}
        return presenters.gpu_fits(
            self.catalogue.gpus,
            weights,
            lambda gpu, tp: estimate_vllm(self.arch, at(tp, gpu)).fits,
            lambda gpu: self.vllm_refuses(gpu) is None,
        )

    def vllm_refuses(self, gpu: GpuSpec) -> str | None:
        """Why vLLM cannot serve this request's quantization on ``gpu`` (None: it can)."""
        return unsupported_gpu(
            vendor=gpu.vendor, fp8_support=gpu.fp8_support, quantization=self.vllm_quantization
        )

    @cached_property
    def vllm_quantization(self) -> str:
        """vLLM's --quantization for this request (the checkpoint's when none is chosen)."""
        return vllm_options(self.request).quantization

    @cached_property
    def vllm_refused(self) -> dict[str, bool]:
        """Which reasons the cards vLLM cannot use have, for the note under the GPU list."""
        reasons = (
            {self.vllm_refuses(gpu) for gpu in self.catalogue.gpus} if self.catalogue else set()
        )
        return {"platform": "platform" in reasons, "quantization": "quantization" in reasons}

    def smaller_model(self, usable_bytes: int) -> dict[str, Any] | None:
        """The largest smaller model of the same family that fits at 16, 8 or 4 bits."""
        request, preset, catalogue = self.request, self.preset, self.catalogue
        if preset is None or catalogue is None:
            return None
        if request.mode not in {"inference", "lora", "qlora"}:
            return None
        series = _series(preset.display_name)
        smaller = [c for c in catalogue.family(preset) if c.params_total < preset.params_total]
        # The same line first (Qwen2.5 14B → Qwen2.5 7B), then the rest of the family.
        # Among equal sizes the plainest name (Qwen2.5 7B before Qwen2.5 7B Instruct 1M).
        smaller.sort(
            key=lambda c: (_series(c.display_name) != series, -c.params_total, len(c.display_name))
        )
        precisions = ("bf16",) if request.mode == "qlora" else ("int4", "bf16", "int8")

        def total(candidate: ModelPreset, precision: str) -> int | None:
            try:
                changed = presenters.with_changes(request, precision=precision)
            except ValueError:
                return None
            changed = changed.model_copy(update={"model": catalogue.description(candidate)})
            return presenters.cached_estimate(changed).total_bytes

        for candidate in smaller[:6]:
            # The most compact format first: when even it does not fit, the candidate is out.
            compact = total(candidate, precisions[0])
            if compact is None or compact > usable_bytes:
                continue
            best, best_total = precisions[0], compact
            for precision in precisions[1:]:
                value = total(candidate, precision)
                if value is not None and value <= usable_bytes:
                    best, best_total = precision, value
                    break
            return {
                "preset": candidate,
                # QLoRA: the smaller model's weights are NF4 too, not a format to choose.
                "precision": None if request.mode == "qlora" else best,
                "total_bytes": best_total,
                "quality": presenters.PRECISION_QUALITY[best],
            }
        return None

    # --- exports ------------------------------------------------------------------------
    def payload(self, *, permalink: str | None = None) -> dict[str, Any]:
        """The result as the JSON export and the API give it."""
        preset = self.preset
        body = presenters.result_payload(
            self.result,
            model_name=self.model_name,
            preset_slug=preset.slug if preset else None,
            hf_repo=preset.hf_repo if preset else None,
            model_type=self.arch.model_type,
        )
        if permalink is not None:
            body["permalink"] = permalink
        body["verdict"] = None
        if self.gpu is not None and self.verdict is not None:
            body["verdict"] = presenters.verdict_payload(
                self.result,
                self.verdict,
                gpu_slug=self.gpu.slug,
                gpu_name=str(self.gpu.name),
                run=self.run_verdict,
            )
        body["commands"] = {command.key: command.text for command in self.ready_commands}
        fitted = self.llama_fit
        body["llama_fit"] = None
        if fitted is not None:
            body["llama_fit"] = {
                **{key: value for key, value in fitted.items() if key != "query"},
                "devices": [device.model_dump() for device in fitted["devices"]],
            }
        body["speed"] = self.speed.model_dump(mode="json") if self.speed else None
        body["speed_unavailable"] = self.speed_unavailable
        body["host_verdict"] = self.host_verdict
        # A request body as it stands: POSTed back, it gives this result again.
        body["inputs"] = self.api_request()
        return body

    def markdown(self, *, link: str) -> str:
        """The Markdown export: the inputs, the breakdown, the verdicts and the notes the page
        shows beside them (system RAM, the stack's switches, the speed, vLLM's pool), read from
        the same context the page renders."""
        return presenters.markdown(
            self.result,
            presenters.breakdown_rows(self.result),
            title=catalogue_name(self.model_name),
            gpu_name=self.gpu.local_name if self.gpu else None,
            verdict=self.verdict,
            link=link,
            inputs=self.inputs,
            notes=presenters.result_notes(self.result_context()),
            run=self.run_verdict,
            cpu_only=self.cpu_only,
        )


def _or_none(compute: Any) -> Any:
    try:
        return compute()
    except ValueError:  # pydantic's validation errors included
        return None


def with_card_memory(fields: dict[str, Any], card: Card | None) -> dict[str, Any]:
    """A request's fields before validation (the page's form, the API's body, the CLI's JSON)
    on the chosen card: vLLM sizes its pool from the card's total memory, so a vllm request
    that does not give ``vllm.gpu_memory_bytes`` gets the card's."""
    if card is None or fields.get("runtime") != "vllm":
        return fields
    settings = fields.get("vllm")
    settings = settings if isinstance(settings, dict) else {}
    if settings.get("gpu_memory_bytes") is not None:
        return fields
    return {**fields, "vllm": {**settings, "gpu_memory_bytes": card.usable_bytes}}


def with_vllm_context(fields: dict[str, Any]) -> dict[str, Any]:
    """A request's fields before validation with vLLM's ``--max-model-len`` read from its
    ``seq_len``, as the page's form maps its sequence length: a vllm request that gives
    ``seq_len`` but not ``vllm.max_model_len`` gets it. Without either, vLLM's own default (the
    model's window) stays."""
    if fields.get("runtime") != "vllm" or fields.get("seq_len") is None:
        return fields
    settings = fields.get("vllm")
    settings = settings if isinstance(settings, dict) else {}
    if settings.get("max_model_len") is not None:
        return fields
    return {**fields, "vllm": {**settings, "max_model_len": fields["seq_len"]}}


def request_on_card(fields: dict[str, Any], card: Card | None) -> EstimateRequest:
    """The estimator's request from its fields, vLLM's memory filled from ``card`` and its
    context from ``seq_len`` (``with_vllm_context``)."""
    return EstimateRequest.model_validate(with_card_memory(with_vllm_context(fields), card))


def chart_contexts(tokens: int) -> list[int]:
    """Powers of two from a sixteenth of ``tokens`` (at least 256, or half of a short context) to
    twice it: the lengths a memory chart shows around the chosen one."""
    low = max(tokens / 16, min(256, tokens / 2))
    lengths = []
    length = 1
    while length <= 2 * tokens:
        if length >= low:
            lengths.append(length)
        length *= 2
    return lengths


def _series(display_name: str) -> str:
    """A model's line without its size: 'Qwen2.5 Coder 7B Instruct' → 'Qwen2.5 Coder'."""
    words = display_name.split()
    for index, word in enumerate(words):
        if any(ch.isdigit() for ch in word) and word[-1:].lower() in {"b", "m"} and index:
            return " ".join(words[:index])
    return display_name


# Where llama.cpp puts each buffer's host part with a CUDA build: weights mapped from the file,
# KV of layers left on the CPU in plain memory, the CPU's compute buffer pinned for the GPU.
HOST_BUFFER_TYPES = {"model buffer size": "CPU_Mapped", "compute buffer size": "CUDA_Host"}


def _llama_cpp_buffers(loaded: LlamaCppResult) -> list[RuntimeBuffer]:
    """llama.cpp's load-time lines (llama_model_load, llama_kv_cache, llama_context); with the
    layers split over several GPUs, one line per device (``CUDA0 model buffer size`` …), the
    system RAM's part on a line of its own, as the log prints them."""
    lines = _llama_cpp_lines(loaded)
    if len(loaded.devices) < 2:
        return lines
    per_device = {
        "model buffer size": "model",
        "KV buffer size": "kv",
        "RS buffer size": "recurrent",
        "compute buffer size": "compute",
    }
    out = []
    for line in lines:
        part = per_device.get(line.log_name)
        if part is None:
            out.append(line)
            continue
        for device in loaded.devices:
            size = getattr(device, part)
            out.append(
                RuntimeBuffer(f"{device.name} {line.log_name}", size, None, line.explanation)
            )
        if line.host_bytes:
            # The system RAM's part, under the buffer type's name in the log.
            host = HOST_BUFFER_TYPES.get(line.log_name, "CPU")
            out.append(
                RuntimeBuffer(f"{host} {line.log_name}", None, line.host_bytes, line.explanation)
            )
    return out


def _llama_cpp_lines(loaded: LlamaCppResult) -> list[RuntimeBuffer]:
    # Hybrid and state-space models only: llama_memory_recurrent's line.
    recurrent = RuntimeBuffer(
        "RS buffer size",
        loaded.recurrent_buffer.gpu,
        loaded.recurrent_buffer.host,
        gettext_lazy(
            "FP32 convolution and recurrent states of the state-space layers, one per slot (-np), on the device of each layer."
        ),
    )
    return [
        RuntimeBuffer(
            "model buffer size",
            loaded.model_buffer.gpu,
            loaded.model_buffer.host,
            gettext_lazy(
                "The GGUF tensors of the layers on each device; the token-embedding table always stays in system RAM."
            ),
        ),
        RuntimeBuffer(
            "KV buffer size",
            loaded.kv_buffer.gpu,
            loaded.kv_buffer.host,
            gettext_lazy(
                "K and V for the whole -c context, allocated at load, on the device of each layer."
            ),
        ),
        *([recurrent] if loaded.recurrent_buffer.total else []),
        RuntimeBuffer(
            "compute buffer size",
            loaded.compute_buffer.gpu,
            loaded.compute_buffer.host,
            gettext_lazy(
                "The working memory of the largest graph: one micro-batch (-ub) against the full context."
            ),
        ),
        RuntimeBuffer(
            "output buffer size",
            None,
            loaded.output_buffer_bytes,
            gettext_lazy("FP32 logits over the vocabulary, one row per slot."),
        ),
    ]


def _vllm_buffers(started: VllmResult) -> list[RuntimeBuffer]:
    """vLLM's start-up lines (worker memory profiling, the KV-cache pool)."""
    return [
        RuntimeBuffer(
            "Model loading took",
            started.weights,
            None,
            gettext_lazy("The weights on each GPU, as vLLM loads them."),
        ),
        RuntimeBuffer(
            "torch peak memory increase",
            started.activation_peak,
            None,
            gettext_lazy(
                "The profiling run at max-num-batched-tokens, sampler included: the most a step can need."
            ),
        ),
        RuntimeBuffer(
            "non-torch forward increase memory",
            started.non_torch,
            None,
            gettext_lazy("cuBLAS workspaces and NCCL buffers, outside PyTorch's allocator."),
        ),
        RuntimeBuffer(
            "Available KV cache memory",
            started.kv_cache,
            None,
            gettext_lazy(
                "What the utilization share leaves after weights, profiling peak and non-torch memory."
            ),
        ),
        RuntimeBuffer(
            "GPU KV cache size",
            None,
            None,
            gettext_lazy("The pool in tokens: blocks × block size."),
            value=number_format(started.kv_cache_tokens, use_l10n=True, force_grouping=True),
        ),
        RuntimeBuffer(
            "Maximum concurrency",
            None,
            None,
            gettext_lazy("Requests of max-model-len tokens the pool holds at once."),
            value=number_format(started.max_concurrency, 2, use_l10n=True) + "×",
        ),
    ]

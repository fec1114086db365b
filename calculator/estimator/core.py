"""``estimate``: the one entry point the page, the API and the CLI share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

from calculator.estimator import activations as act
from calculator.estimator.architecture import Architecture, ConfigError, RecurrentState
from calculator.estimator.checkpoint import checkpoint_quantization, stored_bytes
from calculator.estimator.kv_cache import (
    cached_tokens,
    kv_cache_bytes,
    recurrent_layer_bytes,
    recurrent_state_bytes,
)
from calculator.estimator.lora import adapter_params, module_shapes, resolve_targets
from calculator.estimator.loss import (
    TORCHTUNE_OUTPUT_CHUNKS,
    LossBytes,
    chunked_loss_bytes,
    full_loss_bytes,
    fused_linear_loss_bytes,
)
from calculator.estimator.messages import gettext_noop
from calculator.estimator.optimizer import (
    BNB_MIN_8BIT_SIZE,
    DEEPSPEED_MEMORY_DOCS,
    adafactor_state_elements,
    fp32_gradient_bytes,
    fp32_master_bytes,
    optimizer_profile,
)
from calculator.estimator.overheads import (
    CUDA_CONTEXT_SOURCE,
    RESERVE_SOURCE,
    allocator_reserve_bytes,
    cuda_context_bytes,
)
from calculator.estimator.parallelism import Plan, plan_for
from calculator.estimator.precision import BYTES_PER_ELEMENT, WEIGHT_FORMATS, compute_dtype
from calculator.estimator.runtimes.llama_cpp import (
    GgufLayout,
    LlamaCppOptions,
    estimate_llama_cpp,
    gguf_layout,
    recurrent_cells,
    recurrent_layer_count,
)
from calculator.estimator.runtimes.vllm import Quantization, VllmOptions, estimate_vllm
from calculator.estimator.schemas import (
    Assumption,
    Breakdown,
    ConfigModel,
    CustomModel,
    EstimateRequest,
    EstimateResult,
    Holds,
    HostBreakdown,
    LayerKind,
    StackSwitches,
)
from calculator.estimator.stacks import STACKS, SWITCH_NAMES, Stack, resolve_switches
from calculator.estimator.weights import weight_bytes

FP32 = 4.0


def resolve_architecture(model: ConfigModel | CustomModel) -> Architecture:
    """The architecture a request describes (raises ``ConfigError`` naming a bad field)."""
    cached = model._architecture
    if isinstance(cached, Architecture):
        return cached
    if isinstance(model, ConfigModel):
        arch = Architecture.from_hf_config(model.config)
    else:
        arch = architecture_from_custom(model)
    model._architecture = arch
    return arch


def architecture_from_custom(model: CustomModel) -> Architecture:
    """A Llama-shaped architecture for a model given by size and whatever shape fields are known.

    Missing depth and width come from the dense-transformer count ``params ≈ 12 · L · h²``
    (Kaplan et al. 2020, arXiv:2001.08361 §2.1) with Llama 2's aspect ratio ``h / L = 128``
    (Touvron et al. 2023, arXiv:2307.09288, Table 1: 4096/32, 5120/40); the width is a whole
    number of 128-wide heads per KV group and of 256-element blocks, as in published models (and
    as GGUF K-quants need). ``12 · L · h²`` counts full multi-head attention and no embeddings,
    so with grouped KV heads it falls about a sixth short; the MLP width (or, when that is given,
    the depth) is therefore solved from the shape's own tensor count, so that the tensors —
    what llama.cpp and vLLM load — add up to the stated size, to within 256 MLP columns (or one
    layer). The stated size stays the parameter count.
    """
    params = model.params_billion * 1e9 if model.params_billion else None
    layers, hidden = model.num_layers, model.hidden_size
    kv_heads = model.num_kv_heads
    heads = model.num_attention_heads
    step = math.lcm(256, 128 * (kv_heads or 1)) if heads is None else 256
    if layers is None or hidden is None:
        assert params is not None
        if hidden is not None:
            layers = max(1, round(params / (12 * hidden * hidden)))
        elif layers is not None:
            hidden = max(step, round(math.sqrt(params / (12 * layers)) / step) * step)
        else:
            layers = max(1, round((params / (12 * 128 * 128)) ** (1 / 3)))
            hidden = max(step, round(128 * layers / step) * step)
    if heads is None:
        # 128-wide heads, rounded to a multiple of the KV heads when those are given.
        group = kv_heads or 1
        heads = max(group, round(hidden / 128 / group) * group)
    head_dim = model.head_dim or max(1, hidden // heads)
    kv_heads = kv_heads or heads
    if heads % kv_heads:
        raise ConfigError("num_attention_heads must be a multiple of num_kv_heads.", "num_kv_heads")
    experts = model.num_experts or 0

    def shape(intermediate: int, depth: int) -> Architecture:
        return Architecture(
            model_type="custom",
            vocab_size=model.vocab_size or 32_000,
            hidden_size=hidden,
            num_layers=depth,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            intermediate_size=intermediate,
            tie_word_embeddings=model.tie_word_embeddings,
            num_experts=experts,
            experts_per_token=model.experts_per_token or 0,
            moe_intermediate_size=intermediate if experts else 0,
            moe_layers=tuple(range(depth)) if experts else (),
        )

    intermediate = model.intermediate_size
    if intermediate is None:
        intermediate = max(256, round(hidden * 8 / 3 / 256) * 256)
        if params is not None:
            # The count is linear in the MLP width: solve for it in steps of 256 columns.
            low = shape(256, layers).params_total
            per_step = shape(512, layers).params_total - low
            intermediate = 256 * max(1, 1 + round((params - low) / per_step))
    elif params is not None and model.num_layers is None:
        # The count is linear in the depth: solve for it.
        one = shape(intermediate, 1).params_total
        layers = max(1, 1 + round((params - one) / (shape(intermediate, 2).params_total - one)))
    arch = shape(intermediate, layers)
    return arch.model_copy(update={"params_override": int(params)}) if params else arch


@dataclass
class _Notes:
    items: list[Assumption] = field(default_factory=list)

    def add(self, template: str, source: str, **params: str | int | float) -> None:
        self.items.append(
            Assumption(text=template % params, template=template, params=params, source=source)
        )


def estimate(request: EstimateRequest) -> EstimateResult:
    """Per-GPU memory for one request: a breakdown, the peak of live tensors, and the total."""
    arch = resolve_architecture(request.model)
    plan = plan_for(
        num_gpus=request.num_gpus,
        tensor_parallel=request.tensor_parallel,
        zero_stage=request.zero_stage,
        pipeline_parallel=request.pipeline_parallel,
        context_parallel=request.context_parallel,
    )
    notes = _Notes()
    if isinstance(request.model, CustomModel):
        notes.add(
            gettext_noop(
                "Custom model: missing shape fields were filled with Llama-style defaults "
                "(%(layers)s layers, hidden %(hidden)s, %(heads)s heads, intermediate "
                "%(inter)s, vocabulary %(vocab)s)."
            ),
            gettext_noop(
                "Kaplan et al. 2020 (arXiv:2001.08361) §2.1; Touvron et al. 2023 (arXiv:2307.09288) Table 1"
            ),
            layers=arch.num_layers,
            hidden=arch.hidden_size,
            heads=arch.num_attention_heads,
            inter=arch.intermediate_size,
            vocab=arch.vocab_size,
        )
    image_tokens = 0
    if arch.vision is not None:
        images = 1 if request.images_per_request is None else request.images_per_request
        image_tokens = images * arch.vision.tokens_per_image
        notes.add(
            gettext_noop(
                "Vision-language model: the vision tower's %(params)s parameters are in the "
                "weights; %(images)s image(s) of 1024 × 1024 pixels add %(tokens)s tokens to each "
                "sequence (%(per_image)s per image)."
            ),
            arch.vision.source,
            params=f"{arch.extra_params:,}",
            images=images,
            tokens=image_tokens,
            per_image=arch.vision.tokens_per_image,
        )
        if image_tokens:
            request = request.model_copy(update={"seq_len": request.seq_len + image_tokens})
    if request.runtime == "llama_cpp":
        result = _llama_cpp(request, arch, notes)
    elif request.runtime == "vllm":
        result = _vllm(request, arch, notes)
    elif request.mode == "inference":
        result = _inference(request, arch, plan, notes)
    else:
        result = _training(request, arch, plan, notes)
    return result.model_copy(update={"image_tokens": image_tokens}) if image_tokens else result


CHECKPOINT_SOURCE = (
    "Hugging Face Hub safetensors metadata (tensor elements per dtype); safetensors format "
    "spec (dtype sizes)"
)
CHECKPOINT_NOTE = gettext_noop(
    "Weights: the checkpoint's own %(bytes)s bytes as its safetensors files store them "
    "(%(dtypes)s), scales, zero points and layers left unquantized included, split over "
    "%(tp)s GPU(s)."
)


def _note_checkpoint_bytes(
    notes: _Notes, request: EstimateRequest, stored: int, plan: Plan
) -> None:
    notes.add(
        CHECKPOINT_NOTE,
        CHECKPOINT_SOURCE,
        bytes=f"{stored:,}",
        dtypes=_dtype_summary(request),
        tp=plan.tp * plan.parameter_shards,
    )


def _dtype_summary(request: EstimateRequest) -> str:
    model = request.model
    dtypes = model.checkpoint_dtypes if isinstance(model, ConfigModel) else None
    return ", ".join(sorted(dtypes or {}))


LLAMA_CPP_SOURCE = gettext_noop(
    "llama.cpp src/llama-model.cpp, src/llama-kv-cache.cpp, src/llama-context.cpp, "
    "src/llama-quant.cpp (ggml-org/llama.cpp@007dbbf)"
)
LLAMA_CPP_RECURRENT_SOURCE = gettext_noop(
    "llama.cpp src/llama-memory-recurrent.cpp, src/llama-hparams.cpp n_embd_r and n_embd_s "
    "(ggml-org/llama.cpp@76d9439)"
)
VLLM_SOURCE = gettext_noop(
    "vLLM v1/worker/gpu_worker.py determine_available_memory, v1/core/kv_cache_utils.py "
    "(vllm-project/vllm)"
)


def llama_cpp_options(request: EstimateRequest) -> LlamaCppOptions:
    """The llama.cpp options a request describes: its own, or llama-server's defaults holding
    ``batch_size`` sequences of ``seq_len`` tokens (llama-server splits -c across -np slots)."""
    if request.llama_cpp is not None:
        return request.llama_cpp
    return LlamaCppOptions(
        n_ctx=request.seq_len * request.batch_size, n_parallel=request.batch_size
    )


def llama_cpp_layout(request: EstimateRequest) -> GgufLayout:
    """The request's GGUF file as llama.cpp places it, from the memo the estimate reads: the
    lever searches pass it on instead of looking it up for every trial."""
    gguf_type = llama_cpp_options(request).gguf_type
    return gguf_layout(resolve_architecture(request.model), gguf_type)


def vllm_options(request: EstimateRequest) -> VllmOptions:
    """vLLM's options for one tensor-parallel rank of the request; without a ``quantization``,
    what the checkpoint's quantization_config says (as vLLM reads it)."""
    settings = request.vllm
    if settings is None or settings.gpu_memory_bytes is None:  # the request validator's job
        raise ValueError("the vllm runtime needs vllm.gpu_memory_bytes")
    quantization = settings.quantization or _checkpoint_vllm_quantization(request)
    return VllmOptions(
        gpu_memory_bytes=settings.gpu_memory_bytes,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        max_model_len=settings.max_model_len,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        kv_cache_dtype=settings.kv_cache_dtype,
        quantization=quantization,
        enforce_eager=settings.enforce_eager,
        block_size=settings.block_size,
        tensor_parallel=request.tensor_parallel,
        checkpoint_bytes=checkpoint_weight_bytes(request, vllm_quantization=quantization),
    )


def checkpoint_weight_bytes(
    request: EstimateRequest, *, vllm_quantization: str | None = None
) -> int | None:
    """The checkpoint's stored bytes when they are the weights: a pre-quantized checkpoint (its
    ``quantization_config`` names a format the estimator models) whose safetensors dtypes are
    known, run in its own format — the request's precision under transformers, vLLM's
    ``--quantization`` (default: the checkpoint's) under vLLM. None otherwise, and always for
    llama.cpp, which loads a GGUF conversion rather than the checkpoint."""
    model = request.model
    if not isinstance(model, ConfigModel) or not model.checkpoint_dtypes:
        return None
    stored = checkpoint_quantization(model.config)
    if stored is None or stored.precision is None:
        return None
    if request.runtime == "vllm":
        own = vllm_quantization == stored.vllm
    else:
        own = request.runtime == "transformers" and request.precision == stored.precision
    return stored_bytes(model.checkpoint_dtypes) if own else None


def _checkpoint_vllm_quantization(request: EstimateRequest) -> Quantization:
    if not isinstance(request.model, ConfigModel):
        return "none"
    stored = checkpoint_quantization(request.model.config)
    return cast("Quantization", stored.vllm) if stored else "none"


def _llama_cpp(request: EstimateRequest, arch: Architecture, notes: _Notes) -> EstimateResult:
    """llama.cpp's load-time buffers on the GPU (model, KV cache and the recurrent states of
    hybrid/state-space layers, compute) plus the CUDA context; what stays on the host is
    ``host_bytes``."""
    options = llama_cpp_options(request)
    loaded = estimate_llama_cpp(arch, options)
    notes.add(
        gettext_noop(
            "llama.cpp with a %(gguf)s GGUF file (%(bpw)s bits per weight), a %(n_ctx)s-token "
            "context in %(slots)s slot(s), K cache %(k)s, V cache %(v)s, flash attention "
            "%(fa)s, %(ngl)s of %(layers)s layers on the GPU (the output layer counts as one)."
        ),
        LLAMA_CPP_SOURCE,
        gguf=options.gguf_type,
        bpw=loaded.bits_per_weight,
        n_ctx=loaded.n_ctx_padded,
        slots=options.n_parallel,
        k=options.cache_type_k,
        v=options.cache_type_v,
        fa="on" if options.flash_attention else "off",
        ngl=loaded.gpu_layers,
        layers=arch.num_layers + 1,
    )
    if loaded.recurrent_buffer.total:
        notes.add(
            gettext_noop(
                "%(recurrent)s of %(layers)s layers keep a recurrent state: llama.cpp allocates "
                "it at load in FP32, one per slot (%(slots)s), %(mib)s MiB on the GPU (its RS "
                "buffer), counted with the KV cache."
            ),
            LLAMA_CPP_RECURRENT_SOURCE,
            recurrent=recurrent_layer_count(arch),
            layers=arch.num_layers,
            slots=recurrent_cells(options),
            mib=round(loaded.recurrent_buffer.gpu / 2**20, 2),
        )
    context = cuda_context_bytes() if loaded.gpu_bytes else 0
    if context:
        notes.add(
            gettext_noop("CUDA context and kernels: %(mib)s MiB per GPU."),
            CUDA_CONTEXT_SOURCE,
            mib=context // (1024 * 1024),
        )
    breakdown = Breakdown(
        weights=loaded.model_buffer.gpu,
        # The RS buffer sits beside the KV buffer, on the same devices (llama_memory_hybrid).
        kv_cache=loaded.kv_buffer.gpu + loaded.recurrent_buffer.gpu,
        activations=loaded.compute_buffer.gpu,
        cuda_context=context,
    )
    return EstimateResult(
        breakdown=breakdown,
        peak_allocated_bytes=loaded.gpu_bytes,
        total_bytes=breakdown.total(),
        peak_phase="load",
        params_total=arch.params_total,
        params_trainable=0,
        params_active=arch.params_active,
        num_gpus=request.num_gpus,
        assumptions=notes.items,
        approximate=arch.approximate_reason is not None,
        approximate_reason=arch.approximate_reason,
        runtime="llama_cpp",
        host_bytes=loaded.host_bytes,
        llama_cpp=loaded,
    )


def _vllm(request: EstimateRequest, arch: Architecture, notes: _Notes) -> EstimateResult:
    """vLLM's start-up accounting per GPU: it reserves ``gpu_memory_utilization`` of the card,
    weights and the profiling peak first, the rest as KV-cache pool; CUDA graphs come after."""
    options = vllm_options(request)
    started = estimate_vllm(arch, options)
    notes.add(
        gettext_noop(
            "vLLM reserves %(util)s of the GPU's %(total)s GiB; after the weights, the profiling "
            "peak at %(tokens)s batched tokens and %(non_torch)s GiB outside PyTorch, the rest "
            "becomes the KV-cache pool of %(kv_tokens)s tokens."
        ),
        VLLM_SOURCE,
        util=options.gpu_memory_utilization,
        total=round(options.gpu_memory_bytes / (1 << 30), 2),
        tokens=started.max_num_batched_tokens,
        non_torch=round(started.non_torch / (1 << 30), 2),
        kv_tokens=started.kv_cache_tokens,
    )
    if options.checkpoint_bytes is not None:
        notes.add(
            CHECKPOINT_NOTE,
            CHECKPOINT_SOURCE,
            bytes=f"{options.checkpoint_bytes:,}",
            dtypes=_dtype_summary(request),
            tp=request.tensor_parallel,
        )
    context = cuda_context_bytes()
    notes.add(
        gettext_noop("CUDA context and kernels: %(mib)s MiB per GPU."),
        CUDA_CONTEXT_SOURCE,
        mib=context // (1024 * 1024),
    )
    breakdown = Breakdown(
        weights=started.weights,
        activations=started.activation_peak,
        kv_cache=started.kv_cache,
        cuda_context=context + started.non_torch,
        allocator_reserve=started.cuda_graphs,
    )
    return EstimateResult(
        breakdown=breakdown,
        peak_allocated_bytes=started.weights + started.activation_peak + started.kv_cache,
        total_bytes=breakdown.total(),
        peak_phase="load",
        params_total=arch.params_total,
        params_trainable=0,
        params_active=arch.params_active,
        num_gpus=request.num_gpus,
        assumptions=notes.items,
        approximate=arch.approximate_reason is not None,
        approximate_reason=arch.approximate_reason,
        runtime="vllm",
        vllm=started,
        checkpoint_weight_bytes=options.checkpoint_bytes,
    )


def _kv_precision(request: EstimateRequest) -> str:
    return request.kv_cache_precision or compute_dtype(request.precision)


def _inference(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: _Notes
) -> EstimateResult:
    precision = request.precision
    compute = compute_dtype(precision)
    p = BYTES_PER_ELEMENT[compute]
    quantized = precision not in {"fp32", "fp16", "bf16"}
    stored = checkpoint_weight_bytes(request)
    weights = weight_bytes(
        arch,
        weight_format=precision,
        other_bytes=p if quantized else BYTES_PER_ELEMENT[precision],
        plan=plan,
        stored_bytes=stored,
    )
    if stored is not None:
        _note_checkpoint_bytes(notes, request, stored, plan)
    elif quantized:
        notes.add(
            gettext_noop(
                "Weights: %(format)s; embeddings, LM head and norms stay in %(compute)s; "
                "activations computed in %(compute)s."
            ),
            WEIGHT_FORMATS[precision].source,
            format=WEIGHT_FORMATS[precision].label,
            compute=compute,
        )
    kv_dtype = _kv_precision(request)
    kv = kv_cache_bytes(
        arch,
        batch=request.batch_size,
        seq_len=request.seq_len,
        bytes_per_element=BYTES_PER_ELEMENT[kv_dtype],
        plan=plan,
    )
    layer_kinds = cache_by_layer_kind(
        arch,
        batch=request.batch_size,
        seq_len=request.seq_len,
        kv_bytes=BYTES_PER_ELEMENT[kv_dtype],
        model_bytes=p,
        plan=plan,
    )
    state = recurrent_state_bytes(arch, batch=request.batch_size, model_bytes=p, plan=plan)
    if state:
        recurrent_layers = sum(kind.layers for kind in layer_kinds if "recurrent" in kind.holds)
        notes.add(
            gettext_noop(
                "%(recurrent)s of %(layers)s layers are state-space or linear-attention layers: "
                "each keeps a fixed-size state per sequence (convolution state in %(dtype)s, "
                "recurrent state in fp32), %(mib)s MiB in all, counted with the KV cache; only "
                "the %(attention)s attention layers keep keys and values."
            ),
            "transformers cache_utils.LinearAttentionLayer; Gu & Dao 2023 (arXiv:2312.00752) "
            "§3.3; Yang et al. 2024 (arXiv:2412.06464)",
            recurrent=recurrent_layers,
            layers=arch.num_layers,
            dtype=compute,
            mib=round(state / 2**20, 1),
            attention=arch.attention_layer_count,
        )
        kv += state
    notes.add(
        gettext_noop(
            "Prefill of %(batch)s × %(seq)s tokens in one forward pass; the KV cache (%(dtype)s) "
            "holds every token."
        )
        if not arch.sliding_layer_count
        else gettext_noop(
            "Prefill of %(batch)s × %(seq)s tokens in one forward pass; the KV cache (%(dtype)s) "
            "holds every token, sliding-window layers only the last %(window)s."
        ),
        gettext_noop("Kwon et al. 2023 (vLLM, arXiv:2309.06180) §3; transformers DynamicCache"),
        batch=request.batch_size,
        seq=request.seq_len,
        dtype=kv_dtype,
        window=arch.sliding_window or 0,
    )
    if arch.attention_kind == "mla":
        notes.add(
            gettext_noop(
                "MLA cache counted as transformers stores it (decompressed per-head K and V); vLLM and "
                "SGLang keep only the latent (kv_lora_rank + rope dims), far smaller."
            ),
            gettext_noop(
                "DeepSeek-V2 (arXiv:2405.04434) §2.1; transformers modeling_deepseek_v3.py"
            ),
        )
    setting = act.Setting(
        batch=request.batch_size,
        seq=request.seq_len,
        act_bytes=p,
        residual_bytes=p,
        autocast=False,
        attention=request.attention,
        training=False,
        frozen_base=True,
        plan=plan,
    )
    layer_peak = max(
        act.inference_layer_peak_bytes(arch, setting, index) for index in _layer_samples(arch)
    )
    if request.attention == "eager":
        layer_peak += p * request.batch_size * request.seq_len**2  # the additive causal mask
    logits = int(request.batch_size * arch.vocab_size * p / plan.tp)
    notes.add(
        gettext_noop(
            "Logits only for the last position of each sequence (logits_to_keep=1, as generate() "
            "does)."
        ),
        gettext_noop("transformers GenerationMixin"),
    )
    peak_parts = Breakdown(
        weights=weights.data,
        quantization_overhead=weights.quantization_overhead,
        kv_cache=kv,
        activations=int(layer_peak),
        logits=logits,
    )
    result = _finish(
        request,
        arch,
        peak_parts,
        phase="prefill forward",
        trainable=0,
        notes=notes,
        training=False,
        layer_kinds=layer_kinds,
    )
    return result.model_copy(update={"checkpoint_weight_bytes": stored}) if stored else result


def cache_by_layer_kind(
    arch: Architecture,
    *,
    batch: int,
    seq_len: int,
    kv_bytes: float,
    model_bytes: float,
    plan: Plan,
) -> list[LayerKind]:
    """Which layers hold what between forward passes: a KV cache on attention layers (the
    window on sliding ones), a fixed state on state-space / linear-attention layers, nothing on
    MLP-only layers (Nemotron-H). Mirrors the layers transformers' ``DynamicCache`` builds per
    layer type (``DynamicLayer``, ``DynamicSlidingWindowLayer``, ``LinearAttentionLayer`` in
    ``cache_utils.py``); the byte counts are those of ``kv_cache_bytes`` and
    ``recurrent_layer_bytes``."""
    kv_heads = plan.heads_per_gpu(arch.num_kv_heads)
    per_token = kv_heads * (arch.head_dim + arch.v_head_dim) * kv_bytes
    if not (arch.mixer_kinds or arch.parallel_recurrent or arch.kv_shared_layers):
        # Attention everywhere: full layers keep every token, sliding ones the window.
        sliding = arch.sliding_layer_count
        window = min(seq_len, arch.sliding_window or seq_len)
        summary = []
        if arch.num_layers - sliding:
            full_bytes = int(batch * (arch.num_layers - sliding) * seq_len * per_token)
            summary.append(
                LayerKind(
                    kind="attention",
                    layers=arch.num_layers - sliding,
                    holds="kv_cache",
                    cache_bytes=full_bytes,
                )
            )
        if sliding:
            summary.append(
                LayerKind(
                    kind="sliding_attention",
                    layers=sliding,
                    holds="kv_cache",
                    cache_bytes=int(batch * sliding * window * per_token),
                )
            )
        return summary
    groups: dict[str, list[int]] = {}
    for index in range(arch.num_layers):
        kind = arch.mixer_kind(index)
        if kind == "attention":
            is_sliding = bool(arch.layer_types) and arch.layer_types[index] == "sliding"
            name = "sliding_attention" if is_sliding else "attention"
            if arch.parallel_recurrent is not None:
                name = f"{name}+{arch.parallel_recurrent.kind}"
        elif kind == "none":
            name = "mlp"
        else:
            name = kind
        groups.setdefault(name, []).append(index)
    summary = []
    for name, layers in groups.items():
        kind = arch.mixer_kind(layers[0])
        cache = 0
        if kind == "attention":
            tokens = sum(
                cached_tokens(arch, index, seq_len) for index in layers if arch.keeps_kv(index)
            )
            cache = int(batch * tokens * per_token)
        state: RecurrentState | None = None
        if kind not in {"attention", "none"}:
            state = arch.recurrent_state(kind)
        elif kind == "attention" and arch.parallel_recurrent is not None:
            state = arch.parallel_recurrent
        if state is not None:
            cache += len(layers) * recurrent_layer_bytes(
                arch, state, batch=batch, model_bytes=model_bytes, plan=plan
            )
        holds: Holds
        if kind == "attention":
            holds = "kv_cache+recurrent_state" if state is not None else "kv_cache"
        else:
            holds = "recurrent_state" if state is not None else "nothing"
        summary.append(LayerKind(kind=name, layers=len(layers), holds=holds, cache_bytes=cache))
    return summary


def _layer_samples(arch: Architecture) -> list[int]:
    """One layer of each kind (dense, MoE): layers of a kind are identical."""
    return [index for index, _count in arch.layer_kinds]


def _training(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: _Notes
) -> EstimateResult:
    mode = request.mode
    switches = resolve_switches(request)
    stack = STACKS[request.training_stack]
    seq_local = request.seq_len // plan.cp
    tokens = request.batch_size * seq_local
    params = arch.params_total
    lora = mode in {"lora", "qlora"}
    if request.training_stack != "hf_trainer":
        notes.add(
            gettext_noop("Training stack: %(stack)s, with its defaults for %(switches)s."),
            stack.source,
            stack=stack.label,
            # English names joined by ", ": the page translates them one by one.
            switches=", ".join(SWITCH_NAMES[name] for name in switches.from_stack) or "-",
        )

    # --- dtypes -----------------------------------------------------------------------
    if mode == "qlora" and not stack.qlora_fp32_non_quantized:
        weight_format = "nf4"
        p = residual = other_bytes = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
        autocast = False
        notes.add(
            gettext_noop(
                "QLoRA: base linears in NF4 with double quantization; embeddings, LM head and "
                "norms stay in %(dtype)s, as the stack loads them."
            ),
            WEIGHT_FORMATS["nf4"].source + "; " + stack.source,
            dtype=compute_dtype(request.precision),
        )
    elif mode == "qlora":
        weight_format, other_bytes = "nf4", FP32
        p, residual, autocast = BYTES_PER_ELEMENT[compute_dtype(request.precision)], FP32, True
        notes.add(
            gettext_noop(
                "QLoRA: base linears in NF4 with double quantization; embeddings, LM head and norms "
                "upcast to fp32 by prepare_model_for_kbit_training; compute in bf16."
            ),
            WEIGHT_FORMATS["nf4"].source
            + "; "
            + gettext_noop("PEFT prepare_model_for_kbit_training"),
        )
    elif lora:
        weight_format = request.precision
        quantized = request.precision not in {"fp32", "fp16", "bf16"}
        other_bytes = (
            BYTES_PER_ELEMENT[compute_dtype(request.precision)]
            if quantized
            else BYTES_PER_ELEMENT[request.precision]
        )
        p = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
        residual, autocast = p, False
    elif request.mixed_precision:
        weight_format, other_bytes = "fp32", FP32
        p, residual, autocast = BYTES_PER_ELEMENT[request.precision], FP32, True
        notes.add(
            gettext_noop(
                "Mixed precision: fp32 weights, gradients and optimizer states; forward and "
                "backward autocast to %(dtype)s, whose weight copies live until backward frees them."
            ),
            gettext_noop("Micikevicius et al. 2018 (arXiv:1710.03740) §3; torch.autocast docs"),
            dtype=request.precision,
        )
    else:
        weight_format = request.precision
        other_bytes = BYTES_PER_ELEMENT[request.precision]
        p = residual = BYTES_PER_ELEMENT[request.precision]
        autocast = False
    param_bytes = (
        FP32
        if (request.mixed_precision and not lora)
        else BYTES_PER_ELEMENT[compute_dtype(request.precision)]
    )
    adapter_bytes = p if (lora and stack.adapters_in_compute_dtype) else FP32
    # DeepSpeed trains 16-bit weights through an fp32 optimizer (master weights and states).
    fp32_partitions = stack.fp32_optimizer_partitions and not lora and param_bytes < FP32
    if lora and stack.adapters_in_compute_dtype:
        notes.add(
            gettext_noop(
                "LoRA adapters, their gradients and optimizer states in %(dtype)s (the stack "
                "trains in the model's dtype; PEFT's default would upcast them to fp32)."
            ),
            stack.source,
            dtype=compute_dtype(request.precision),
        )

    # --- parameters, adapters, gradients, optimizer ---------------------------------------
    # LoRA on a pre-quantized checkpoint (PEFT over AWQ, GPTQ, FP8 layers) freezes the tensors
    # the files store, as inference loads them; QLoRA quantizes a full-precision checkpoint.
    stored = checkpoint_weight_bytes(request) if mode == "lora" else None
    base = weight_bytes(
        arch,
        weight_format=weight_format,
        other_bytes=other_bytes,
        plan=plan,
        stored_bytes=stored,
    )
    if stored is not None:
        _note_checkpoint_bytes(notes, request, stored, plan)
    targets = resolve_targets(arch, request.lora.targets) if lora else frozenset()
    adapters = adapter_params(arch, rank=request.lora.rank, targets=targets) if lora else 0
    trainable = adapters if lora else params
    trainable_bytes = adapter_bytes if lora else param_bytes
    shard_model = plan.tp
    trainable_local = trainable / shard_model

    gradients = trainable_local * trainable_bytes / plan.gradient_shards
    if plan.shard_group > 1 and plan.zero_stage == 0:
        gradients *= 2
        notes.add(
            gettext_noop(
                "Data parallel (DDP): gradient buckets double the gradient memory "
                "(gradient_as_bucket_view=False, the default)."
            ),
            gettext_noop("PyTorch DistributedDataParallel docs, gradient_as_bucket_view"),
        )
    state_dtype_bytes = FP32 if fp32_partitions else trainable_bytes
    profile = optimizer_profile(request.optimizer, state_dtype_bytes, switches.optimizer_impl)
    if request.optimizer == "adafactor":
        shapes = [
            (d_in, d_out, copies * count)
            for index, count in arch.layer_kinds
            for name, (d_in, d_out, copies) in module_shapes(arch, index).items()
            if (name in targets if lora else copies)
        ]
        matrix_elements = sum(c * i * o for i, o, c in shapes)
        state_elements = adafactor_state_elements(shapes, max(0, trainable - matrix_elements))
        optimizer_states = state_elements * FP32 / shard_model / plan.optimizer_shards
    else:
        state_bytes = trainable_local * profile.state_bytes_per_param
        if profile.small_tensor_state_bytes is not None and not lora:
            small = _small_tensor_params(arch)
            state_bytes += small * (
                profile.small_tensor_state_bytes - profile.state_bytes_per_param
            )
        optimizer_states = state_bytes / plan.optimizer_shards
    step_temp = (
        trainable_local * state_dtype_bytes * profile.step_temp_fraction / plan.optimizer_shards
        + _largest_trainable_tensor(arch, lora=lora, rank=request.lora.rank, plan=plan)
        * trainable_bytes
        * profile.step_temp_largest_tensors
    )
    if request.optimizer == "adamw":
        step_note = {
            "fused": gettext_noop(
                "%(optimizer)s states for %(trainable)s trainable parameters; the fused step "
                "updates in place and needs no temporaries."
            ),
            "foreach": gettext_noop(
                "%(optimizer)s states for %(trainable)s trainable parameters; the foreach step "
                "holds one more state-sized temporary (the square root of the second moment)."
            ),
            "for_loop": gettext_noop(
                "%(optimizer)s states for %(trainable)s trainable parameters; the for-loop step "
                "holds temporaries of about three of the largest parameter tensor."
            ),
        }[switches.optimizer_impl]
    else:
        step_note = gettext_noop("%(optimizer)s states for %(trainable)s trainable parameters.")
    notes.add(step_note, profile.source, optimizer=profile.label, trainable=f"{trainable:,}")
    if profile.paged:
        notes.add(
            gettext_noop(
                "Paged optimizer: its states are in CUDA unified memory, counted here on the GPU; "
                "under memory pressure the driver moves them to CPU RAM page by page (slower)."
            ),
            profile.source,
        )

    # --- weights resident during forward/backward ----------------------------------------
    master = 0.0
    working_copies = 0.0
    if request.mixed_precision and not lora:
        # The fp32 master weights are part of the optimizer state ZeRO-1 already partitions
        # (Rajbhandari et al. 2020, arXiv:1910.02054 §5.1: K = 12 bytes of master, momentum and
        # variance per parameter; Megatron's distributed optimizer likewise, Megatron-LM#654).
        # base.data is already this GPU's ZeRO-3 shard: undo it before the optimizer's split.
        master = base.data * plan.parameter_shards / plan.optimizer_shards
        weights_resident = 0.0
        working_copies = min(arch.linear_params, params) / plan.tp * p
        if plan.zero_stage == 3:
            working_copies = 2 * arch.largest_layer_params / plan.tp * p
    else:
        weights_resident = float(base.data)
    step_gradients = gradients
    if fp32_partitions:
        master = fp32_master_bytes(trainable_local, plan.optimizer_shards)
        # The rank's 16-bit gradient partition becomes fp32 for the update.
        step_gradients = (
            gradients
            - trainable_local * trainable_bytes / plan.optimizer_shards
            + fp32_gradient_bytes(trainable_local, plan.optimizer_shards)
        )
        notes.add(
            gettext_noop(
                "%(stack)s with 16-bit weights: fp32 master weights and fp32 optimizer states, "
                "%(shards)s-way partitioned (12 bytes per parameter for Adam); the gradients "
                "are converted to fp32 for the step."
            ),
            "Rajbhandari et al. 2020 (arXiv:1910.02054) §5.1; " + DEEPSPEED_MEMORY_DOCS,
            stack=stack.label,
            shards=plan.optimizer_shards,
        )
    gather = 0.0
    if plan.zero_stage == 3 or switches.parameter_offload:
        gather = (
            2
            * arch.largest_layer_params
            / plan.tp
            * (p if request.mixed_precision else param_bytes)
        )
        notes.add(
            gettext_noop(
                "ZeRO-3/FSDP: each GPU holds 1/N of the parameters plus the gathered full parameters of "
                "the current and the prefetched layer."
            ),
            gettext_noop(
                "Rajbhandari et al. 2020 (arXiv:1910.02054) §5.3; PyTorch FSDP docs (forward_prefetch)"
            ),
        )
    if (
        (plan.zero_stage == 3 or switches.parameter_offload)
        and request.mixed_precision
        and not lora
    ):
        working_copies = gather
        gather = 0.0

    # --- offload to CPU RAM --------------------------------------------------------------
    host = _host_offload(
        request,
        switches,
        stack,
        plan=plan,
        trainable_local=trainable_local,
        trainable_bytes=trainable_bytes,
        optimizer_states=optimizer_states,
        master=master,
        # DeepSpeed's offload_param moves the 16-bit partition; its master stays the optimizer's.
        weights=weights_resident + (0.0 if fp32_partitions else master),
        lora=lora,
        notes=notes,
        host_gradient_bytes=FP32 if fp32_partitions else trainable_bytes,
    )
    if switches.optimizer_offload:
        optimizer_states = 0.0
        step_temp = 0.0
        master = 0.0
        # Gradients leave the GPU bucket by bucket as they are reduced (ZeRO-Offload §4.1).
        gradients = min(gradients, 2 * arch.largest_layer_params / plan.tp * trainable_bytes)
        step_gradients = gradients
    if switches.parameter_offload and not lora:
        weights_resident = 0.0
        if not fp32_partitions:
            master = 0.0

    # --- activations and logits ----------------------------------------------------------
    checkpointing = switches.activation_checkpointing
    setting = act.Setting(
        batch=request.batch_size,
        seq=seq_local,
        act_bytes=p,
        residual_bytes=residual,
        autocast=autocast,
        attention=request.attention,
        training=True,
        frozen_base=lora,
        plan=plan,
        lora_targets=targets,
        lora_rank=request.lora.rank if lora else 0,
        sequence_parallel=switches.sequence_parallel and plan.tp > 1,
        selective_recompute=checkpointing == "selective",
        adapter_bytes=adapter_bytes,
        fused_gelu=stack.own_model_code,
        quantized_base=mode == "qlora",
        fused_layer_kernels=stack.fused_layer_kernels,
    )
    one_layer = max(act.training_layer_bytes(arch, setting, i) for i in _layer_samples(arch))
    working = max(act.backward_layer_working_bytes(arch, setting, i) for i in _layer_samples(arch))
    model_level = act.model_level_bytes(arch, setting)
    per_layer_kept = {
        index: (
            act.checkpointed_layer_bytes(arch, setting)
            if checkpointing == "full"
            else act.training_layer_bytes(arch, setting, index)
        )
        for index, _count in arch.layer_kinds
    }
    if checkpointing == "full":
        notes.add(
            gettext_noop(
                "Gradient checkpointing keeps each layer's input and recomputes one layer at a time "
                "in backward."
            ),
            gettext_noop(
                "Chen et al. 2016 (arXiv:1604.06174); transformers gradient_checkpointing_enable()"
            ),
        )
    elif checkpointing == "selective":
        notes.add(
            gettext_noop(
                "Selective recomputation: every layer keeps its activations except the attention "
                "scores, which backward recomputes."
            ),
            gettext_noop("Korthikanti et al. 2022 (arXiv:2205.05198) §4.2"),
        )
    if setting.sequence_parallel:
        notes.add(
            gettext_noop(
                "Sequence parallelism: norms, dropout and the residual stream are split across "
                "the %(tp)s tensor-parallel GPUs."
            ),
            gettext_noop("Korthikanti et al. 2022 (arXiv:2205.05198) §4.2.2"),
            tp=plan.tp,
        )
    recompute = one_layer if checkpointing == "full" else 0.0
    loss = _loss_bytes(
        arch,
        switches.loss,
        plan=plan,
        tokens=tokens,
        p=p,
        autocast=autocast,
        lora=lora,
        param_bytes=param_bytes,
        notes=notes,
    )

    # --- pipeline stages -------------------------------------------------------------------
    if plan.pp > arch.num_layers:
        raise ConfigError(
            f"pipeline_parallel ({plan.pp}) exceeds the model's {arch.num_layers} layers",
            "pipeline_parallel",
        )
    stages = _pipeline_stages(arch, plan, request.micro_batches)
    if plan.pp > 1:
        notes.add(
            gettext_noop(
                "Pipeline parallel, 1F1B schedule: stage k of %(stages)s keeps the activations of "
                "min(%(stages)s - k, micro-batches) micro-batches in flight; the first stage also "
                "holds the embedding, the last the LM head and the loss."
            ),
            gettext_noop(
                "Narayanan et al. 2021 (arXiv:2104.04473) §2.2.1; Korthikanti et al. 2022 "
                "(arXiv:2205.05198) §4.2.3"
            ),
            stages=plan.pp,
        )
    if plan.cp > 1:
        notes.add(
            gettext_noop(
                "Context parallel: each GPU holds %(tokens)s of the %(seq)s tokens of a sequence "
                "and their activations; keys and values of the other chunks pass through in turn."
            ),
            gettext_noop(
                "Megatron-LM context parallelism docs; Liu et al. 2023 (arXiv:2310.01889)"
            ),
            tokens=seq_local,
            seq=request.seq_len,
        )
    # A tied embedding's backward materialises a full vocabulary × hidden gradient before it is
    # added to the one the LM head already left in .grad (embedding_dense_backward, then
    # AccumulateGrad); untied embeddings write theirs straight into .grad.
    tied_grad = 0.0
    if arch.tie_word_embeddings and not lora:
        tied_grad = arch.embedding_params / plan.tp * trainable_bytes
    offload_activations = switches.activation_offloading
    best: tuple[int, str, Breakdown] | None = None
    host_activations = 0.0
    # A middle stage never peaks: the first has at least as many layers, more micro-batches in
    # flight and the embedding; only the last holds the LM head and the loss.
    for stage in stages if len(stages) < 3 else [stages[0], stages[-1]]:
        share = stage.param_share
        layer_share = stage.layers / arch.num_layers
        persist_share = layer_share if lora else share
        kept_layers = sum(count * per_layer_kept[index] for index, count in arch.layer_kinds) * (
            stage.layers / arch.num_layers
        )
        kept = stage.in_flight * kept_layers + (model_level if stage.last else 0.0)
        if offload_activations:
            host_activations = max(host_activations, kept - (model_level if stage.last else 0.0))
            # The layer being offloaded and the one being brought back stay on the GPU.
            kept = min(2, stage.layers) * (kept_layers / max(1, stage.layers)) + (
                model_level if stage.last else 0.0
            )
        loss_fwd = loss.forward if stage.last else 0.0
        loss_bwd = loss.backward if stage.last else 0.0
        resident = weights_resident * share
        stage_master = master * share
        stage_states = optimizer_states * persist_share
        stage_grads = gradients * persist_share
        stage_temp = step_temp * persist_share
        adapters_bytes = adapters / shard_model * adapter_bytes * layer_share
        stage_gather = gather
        common = {
            "master_weights": int(stage_master),
            "optimizer_states": int(stage_states),
            "adapters": int(adapters_bytes),
            "quantization_overhead": int(base.quantization_overhead * share),
        }
        # With several micro-batches in flight, gradients of earlier ones already exist.
        grads_early = (
            int(stage_grads)
            if stage.in_flight > 1 or plan.pp > 1 or stack.resident_gradients
            else 0
        )
        weights_fwd = int(resident + working_copies * share + stage_gather)
        weights_bwd = weights_fwd
        if autocast and checkpointing == "full" and not lora and plan.zero_stage != 3:
            # Autocast's cache of cast weights is dropped when the autocast region ends; with
            # checkpointing nothing inside a layer keeps them, so backward (which re-casts one
            # layer at a time) holds only the LM head's copy, saved outside the layers.
            head_copy = arch.lm_head_params / plan.tp * p if stage.last else 0.0
            weights_bwd = int(resident + stage_gather + head_copy)
        phases = {
            "forward (loss)": Breakdown(
                weights=weights_fwd,
                activations=int(kept),
                logits=int(loss_fwd),
                gradients=grads_early,
                **common,
            ),
            "backward (start)": Breakdown(
                weights=weights_bwd,
                activations=int(kept),
                logits=int(loss_bwd),
                gradients=grads_early,
                **common,
            ),
            # With checkpointing the last layer is recomputed only once the loss's gradient has
            # been reduced to the hidden states: the logit-sized tensors are gone by then.
            "backward (recompute)": Breakdown(
                weights=weights_bwd,
                activations=int(kept + recompute + working) if recompute else 0,
                gradients=grads_early,
                **common,
            ),
            "backward (end)": Breakdown(
                weights=int(resident + stage_gather),
                activations=int(working + recompute),
                gradients=int(stage_grads + (tied_grad if stage.index == 0 else 0.0)),
                **common,
            ),
            "optimizer step": Breakdown(
                weights=int(resident),
                gradients=int(step_gradients * persist_share),
                optimizer_states=int(stage_states + stage_temp),
                **{k: v for k, v in common.items() if k != "optimizer_states"},
            ),
        }
        phase, parts = max(phases.items(), key=lambda item: item[1].total())
        if best is None or parts.total() > best[2].total():
            best = (stage.index, phase, parts)
    assert best is not None
    peak_stage, phase, peak_parts = best
    if offload_activations:
        host = host.model_copy(
            update={
                "activations": int(host_activations),
                "pinned": host.pinned + (int(host_activations) if stack.pinned_host_memory else 0),
            }
        )
        notes.add(
            gettext_noop(
                "Activation offloading: the checkpointed activations (%(gib)s GiB) wait in CPU "
                "RAM; the GPU keeps the layers being copied out and brought back."
            ),
            stack.source,
            gib=round(host_activations / 2**30, 2),
        )
    result = _finish(
        request, arch, peak_parts, phase=phase, trainable=int(trainable), notes=notes, training=True
    )
    return result.model_copy(
        update={
            "host_bytes": host.total(),
            "host_breakdown": host,
            "switches": switches,
            "peak_stage": peak_stage if plan.pp > 1 else None,
            "checkpoint_weight_bytes": stored,
        }
    )


@dataclass(frozen=True)
class _Stage:
    index: int
    layers: int
    in_flight: int
    param_share: float
    """This stage's parameters as a fraction of the model's."""
    last: bool


def _pipeline_stages(arch: Architecture, plan: Plan, micro_batches: int | None) -> list[_Stage]:
    """Layers, parameters and in-flight micro-batches of each pipeline stage.

    Layers are split evenly (the first stages take the remainder). Under 1F1B the first stage
    runs ``pp`` forward passes before its first backward, so stage ``k`` keeps
    ``min(pp - k, m)`` micro-batches of activations (Narayanan et al. 2021, arXiv:2104.04473
    §2.2.1). The first stage holds the embedding; the last the final norm and the LM head, and a
    second copy of a tied embedding (Megatron-LM keeps the word embeddings on both ends).
    """
    if plan.pp == 1:
        return [_Stage(index=0, layers=arch.num_layers, in_flight=1, param_share=1.0, last=True)]
    total = arch.params_total
    layer_total = sum(count * arch.layer_params(index) for index, count in arch.layer_kinds)
    per_layer = layer_total / arch.num_layers
    head = arch.lm_head_params or arch.embedding_params
    rest = max(0, total - layer_total - arch.embedding_params - arch.lm_head_params)
    m = micro_batches or plan.pp
    base, extra = divmod(arch.num_layers, plan.pp)
    stages = []
    for k in range(plan.pp):
        layers = base + (1 if k < extra else 0)
        stage_params = layers * per_layer
        if k == 0:
            stage_params += arch.embedding_params
        if k == plan.pp - 1:
            stage_params += head + rest
        stages.append(
            _Stage(
                index=k,
                layers=layers,
                in_flight=min(plan.pp - k, m),
                param_share=stage_params / total if total else 0.0,
                last=k == plan.pp - 1,
            )
        )
    return stages


def _small_tensor_params(arch: Architecture) -> int:
    """Parameters in tensors under bitsandbytes' ``min_8bit_size`` (4096 elements): the norm
    weights when the hidden size is below it."""
    if arch.hidden_size >= BNB_MIN_8BIT_SIZE:
        return 0
    norms = arch.num_layers * (arch.pre_norms_per_layer + arch.post_norms_per_layer)
    return (norms + (1 if arch.final_norm else 0)) * arch.hidden_size


def _largest_trainable_tensor(arch: Architecture, *, lora: bool, rank: int, plan: Plan) -> float:
    """Elements of the largest trainable tensor on one GPU (for per-tensor optimizer loops)."""
    if lora:
        return rank * max(arch.hidden_size, arch.intermediate_size, arch.moe_intermediate_size)
    width = arch.embedding_width or arch.hidden_size
    inner = max(arch.intermediate_size, arch.moe_intermediate_size)
    return max(arch.vocab_size * width, arch.hidden_size * inner) / plan.tp


def _loss_bytes(
    arch: Architecture,
    loss: str,
    *,
    plan: Plan,
    tokens: int,
    p: float,
    autocast: bool,
    lora: bool,
    param_bytes: float,
    notes: _Notes,
) -> LossBytes:
    vocab_local = arch.vocab_size / plan.tp
    if loss == "chunked":
        notes.add(
            gettext_noop(
                "Chunked loss: the LM head and the fp32 upcast run on %(chunks)s chunks of "
                "positions; the fp32 log-probabilities of all chunks stay saved for backward."
            ),
            gettext_noop("torchtune CEWithChunkedOutputLoss; LitGPT chunked_cross_entropy"),
            chunks=TORCHTUNE_OUTPUT_CHUNKS,
        )
        return chunked_loss_bytes(tokens=tokens, vocab=vocab_local, logit_bytes=p)
    if loss == "fused_linear":
        notes.add(
            gettext_noop(
                "Fused linear cross-entropy: the LM head and the loss run chunk by chunk and the "
                "full logits never exist; the gradients of the hidden states are formed in forward."
            ),
            gettext_noop("Liger-Kernel ops/fused_linear_cross_entropy.py"),
        )
        head = (arch.lm_head_params or arch.embedding_params) / plan.tp
        return fused_linear_loss_bytes(
            tokens=tokens,
            vocab=vocab_local,
            hidden=arch.hidden_size,
            act_bytes=p,
            head_params_local=head,
            head_trainable=not lora,
            param_bytes=param_bytes,
        )
    notes.add(
        gettext_noop(
            "Loss over every position with logits upcast to fp32 (transformers ForCausalLMLoss); the "
            "backward of cross-entropy holds three fp32 logit-sized tensors at once."
        ),
        gettext_noop(
            "transformers loss_utils.ForCausalLMLoss; PyTorch log_softmax/nll_loss backward"
        ),
    )
    return full_loss_bytes(
        tokens=tokens,
        vocab=vocab_local,
        logit_bytes=p,
        fp32_model=p == FP32 and not autocast,
        softcap=bool(arch.final_logit_softcapping),
    )


def _host_offload(
    request: EstimateRequest,
    switches: StackSwitches,
    stack: Stack,
    *,
    plan: Plan,
    trainable_local: float,
    trainable_bytes: float,
    optimizer_states: float,
    master: float,
    weights: float,
    lora: bool,
    notes: _Notes,
    host_gradient_bytes: float,
) -> HostBreakdown:
    """CPU RAM per GPU process for offloaded optimizer states and parameters.

    ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840 §4.1) keeps the 16-bit parameters on the GPU
    and moves the 16-bit gradients, the fp32 master parameters and both fp32 Adam moments to the
    CPU, where DeepSpeedCPUAdam runs the step; each data-parallel rank keeps its 1/N partition.
    DeepSpeed holds those gradients in fp32 (``host_gradient_bytes`` 4: 16 bytes per parameter
    with the master weights and moments, its memory docs' ZeRO-3 CPU formula).
    FSDP2's ``CPUOffloadPolicy`` keeps sharded parameters, gradients and the optimizer on the CPU.
    """
    host = HostBreakdown()
    if switches.optimizer_offload:
        shards = max(plan.optimizer_shards, plan.gradient_shards)
        cpu_states = trainable_local * 2 * FP32 / plan.optimizer_shards
        if request.optimizer != "adamw":
            cpu_states = optimizer_states
        cpu_master = (
            master
            if master
            else (trainable_local * FP32 / plan.optimizer_shards if trainable_bytes != FP32 else 0)
        )
        cpu_grads = trainable_local * host_gradient_bytes / shards
        host = host.model_copy(
            update={
                "optimizer_states": int(cpu_states),
                "master_weights": int(cpu_master),
                "gradients": int(cpu_grads),
            }
        )
        notes.add(
            gettext_noop(
                "Optimizer offload: fp32 master weights, optimizer states and gradients in CPU "
                "RAM (%(gib)s GiB per GPU); the step runs on the CPU."
            ),
            gettext_noop("Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840) §4.1")
            + "; "
            + stack.source,
            gib=round((cpu_states + cpu_master + cpu_grads) / 2**30, 2),
        )
    if switches.parameter_offload and not lora:
        cpu_params = weights / max(1, plan.shard_group if plan.zero_stage < 3 else 1)
        host = host.model_copy(update={"parameters": int(cpu_params)})
        notes.add(
            gettext_noop(
                "Parameter offload: this GPU's parameter shard waits in CPU RAM and each layer is "
                "fetched when it runs."
            ),
            gettext_noop("DeepSpeed ZeRO-3 offload_param; PyTorch FSDP2 CPUOffloadPolicy"),
        )
    if stack.pinned_host_memory:
        host = host.model_copy(update={"pinned": host.total()})
    return host


def _finish(
    request: EstimateRequest,
    arch: Architecture,
    peak_parts: Breakdown,
    *,
    phase: str,
    trainable: int,
    notes: _Notes,
    training: bool,
    layer_kinds: list[LayerKind] | None = None,
) -> EstimateResult:
    peak = peak_parts.total()
    context = cuda_context_bytes()
    reserve = allocator_reserve_bytes(peak, training=training)
    notes.add(
        gettext_noop("CUDA context and kernels: %(mib)s MiB per GPU."),
        CUDA_CONTEXT_SOURCE,
        mib=context // (1024 * 1024),
    )
    notes.add(
        gettext_noop("Caching-allocator reserve: %(percent)s%% of the peak."),
        RESERVE_SOURCE,
        percent=round(100 * reserve / peak) if peak else 0,
    )
    breakdown = peak_parts.model_copy(
        update={"cuda_context": context, "allocator_reserve": reserve}
    )
    return EstimateResult(
        breakdown=breakdown,
        peak_allocated_bytes=peak,
        total_bytes=breakdown.total(),
        peak_phase=phase,
        params_total=arch.params_total,
        params_trainable=trainable,
        params_active=arch.params_active,
        num_gpus=request.num_gpus,
        assumptions=notes.items,
        approximate=arch.approximate_reason is not None,
        approximate_reason=arch.approximate_reason,
        layer_kinds=layer_kinds or [],
    )

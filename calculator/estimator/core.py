"""``estimate``: the one entry point the page, the API and the CLI share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

from calculator.estimator import activations as act
from calculator.estimator.architecture import Architecture, ConfigError, RecurrentState
from calculator.estimator.checkpoint import checkpoint_quantization
from calculator.estimator.kv_cache import (
    cached_tokens,
    kv_cache_bytes,
    recurrent_layer_bytes,
    recurrent_state_bytes,
)
from calculator.estimator.lora import adapter_params, module_shapes, resolve_targets
from calculator.estimator.messages import gettext_noop
from calculator.estimator.optimizer import adafactor_state_elements, optimizer_profile
from calculator.estimator.overheads import (
    CUDA_CONTEXT_SOURCE,
    RESERVE_SOURCE,
    allocator_reserve_bytes,
    cuda_context_bytes,
)
from calculator.estimator.parallelism import Plan, plan_for
from calculator.estimator.precision import BYTES_PER_ELEMENT, WEIGHT_FORMATS, compute_dtype
from calculator.estimator.runtimes.llama_cpp import (
    GgufTensor,
    LlamaCppOptions,
    estimate_llama_cpp,
    gguf_tensor_types,
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
    LayerKind,
)
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
    (Touvron et al. 2023, arXiv:2307.09288, Table 1: 4096/32, 5120/40).
    """
    params = model.params_billion * 1e9 if model.params_billion else None
    layers, hidden = model.num_layers, model.hidden_size
    if layers is None or hidden is None:
        assert params is not None
        if hidden is not None:
            layers = max(1, round(params / (12 * hidden * hidden)))
        elif layers is not None:
            hidden = max(64, round(math.sqrt(params / (12 * layers)) / 64) * 64)
        else:
            layers = max(1, round((params / (12 * 128 * 128)) ** (1 / 3)))
            hidden = max(128, round(128 * layers / 128) * 128)
    kv_heads = model.num_kv_heads
    heads = model.num_attention_heads
    if heads is None:
        # 128-wide heads, rounded to a multiple of the KV heads when those are given.
        group = kv_heads or 1
        heads = max(group, round(hidden / 128 / group) * group)
    head_dim = model.head_dim or max(1, hidden // heads)
    kv_heads = kv_heads or heads
    if heads % kv_heads:
        raise ConfigError("num_attention_heads must be a multiple of num_kv_heads.", "num_kv_heads")
    intermediate = model.intermediate_size or max(256, round(hidden * 8 / 3 / 256) * 256)
    experts = model.num_experts or 0
    return Architecture(
        model_type="custom",
        vocab_size=model.vocab_size or 32_000,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        intermediate_size=intermediate,
        tie_word_embeddings=model.tie_word_embeddings,
        num_experts=experts,
        experts_per_token=model.experts_per_token or 0,
        moe_intermediate_size=intermediate if experts else 0,
        moe_layers=tuple(range(layers)) if experts else (),
        params_override=int(params) if params else None,
    )


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


LLAMA_CPP_SOURCE = gettext_noop(
    "llama.cpp src/llama-model.cpp, src/llama-kv-cache.cpp, src/llama-context.cpp, "
    "src/llama-quant.cpp (ggml-org/llama.cpp@007dbbf)"
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


def vllm_options(request: EstimateRequest) -> VllmOptions:
    """vLLM's options for one tensor-parallel rank of the request; without a ``quantization``,
    what the checkpoint's quantization_config says (as vLLM reads it)."""
    settings = request.vllm
    if settings is None or settings.gpu_memory_bytes is None:  # the request validator's job
        raise ValueError("the vllm runtime needs vllm.gpu_memory_bytes")
    return VllmOptions(
        gpu_memory_bytes=settings.gpu_memory_bytes,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        max_model_len=settings.max_model_len,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        kv_cache_dtype=settings.kv_cache_dtype,
        quantization=settings.quantization or _checkpoint_vllm_quantization(request),
        enforce_eager=settings.enforce_eager,
        block_size=settings.block_size,
        tensor_parallel=request.tensor_parallel,
    )


def _checkpoint_vllm_quantization(request: EstimateRequest) -> Quantization:
    if not isinstance(request.model, ConfigModel):
        return "none"
    stored = checkpoint_quantization(request.model.config)
    return cast("Quantization", stored.vllm) if stored else "none"


_GGUF_TYPES: dict[tuple[str, str], list[tuple[GgufTensor, str]]] = {}


def _gguf_types(
    request: EstimateRequest, arch: Architecture, gguf_type: str
) -> list[tuple[GgufTensor, str]]:
    """The file's tensor types, computed once per model and file type: they are most of a
    llama.cpp estimate's cost, and context or layer searches ask for the same file many times."""
    key = (request.model.cache_key(), gguf_type)
    typed = _GGUF_TYPES.get(key)
    if typed is None:
        if len(_GGUF_TYPES) >= 2_000:
            _GGUF_TYPES.clear()
        typed = _GGUF_TYPES[key] = gguf_tensor_types(arch, gguf_type)
    return typed


def _llama_cpp(request: EstimateRequest, arch: Architecture, notes: _Notes) -> EstimateResult:
    """llama.cpp's load-time buffers on the GPU (model, KV cache, compute) plus the CUDA context;
    what stays on the host is ``host_bytes``."""
    options = llama_cpp_options(request)
    loaded = estimate_llama_cpp(arch, options, typed=_gguf_types(request, arch, options.gguf_type))
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
    context = cuda_context_bytes() if loaded.gpu_bytes else 0
    if context:
        notes.add(
            gettext_noop("CUDA context and kernels: %(mib)s MiB per GPU."),
            CUDA_CONTEXT_SOURCE,
            mib=context // (1024 * 1024),
        )
    breakdown = Breakdown(
        weights=loaded.model_buffer.gpu,
        kv_cache=loaded.kv_buffer.gpu,
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
    weights = weight_bytes(
        arch,
        weight_format=precision,
        other_bytes=p if quantized else BYTES_PER_ELEMENT[precision],
        plan=plan,
    )
    if quantized:
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
    return _finish(
        request,
        arch,
        peak_parts,
        phase="prefill forward",
        trainable=0,
        notes=notes,
        training=False,
        layer_kinds=layer_kinds,
    )


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
    tokens = request.batch_size * request.seq_len
    params = arch.params_total
    lora = mode in {"lora", "qlora"}

    # --- dtypes -----------------------------------------------------------------------
    if mode == "qlora":
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

    # --- parameters, adapters, gradients, optimizer ---------------------------------------
    base = weight_bytes(arch, weight_format=weight_format, other_bytes=other_bytes, plan=plan)
    targets = resolve_targets(arch, request.lora.targets) if lora else frozenset()
    adapters = adapter_params(arch, rank=request.lora.rank, targets=targets) if lora else 0
    trainable = adapters if lora else params
    trainable_bytes = FP32 if lora else param_bytes
    shard_model = plan.tp
    trainable_local = trainable / shard_model

    gradients = trainable_local * trainable_bytes / plan.gradient_shards
    if plan.dp > 1 and plan.zero_stage == 0:
        gradients *= 2
        notes.add(
            gettext_noop(
                "Data parallel (DDP): gradient buckets double the gradient memory "
                "(gradient_as_bucket_view=False, the default)."
            ),
            gettext_noop("PyTorch DistributedDataParallel docs, gradient_as_bucket_view"),
        )
    profile = optimizer_profile(request.optimizer, trainable_bytes)
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
        optimizer_states = trainable_local * profile.state_bytes_per_param / plan.optimizer_shards
    step_temp = (
        trainable_local * trainable_bytes * profile.step_temp_fraction / plan.optimizer_shards
    )
    notes.add(
        gettext_noop(
            "%(optimizer)s states for %(trainable)s trainable parameters; step temporaries of "
            "PyTorch's foreach implementation included."
        ),
        profile.source,
        optimizer=profile.label,
        trainable=f"{trainable:,}",
    )

    # --- weights resident during forward/backward ----------------------------------------
    master = 0
    working_copies = 0.0
    if request.mixed_precision and not lora:
        master = base.data
        weights_resident = 0
        working_copies = min(arch.linear_params, params) / plan.tp * p
        if plan.zero_stage == 3:
            working_copies = 2 * arch.largest_layer_params / plan.tp * p
    else:
        weights_resident = base.data
    gather = 0.0
    if plan.zero_stage == 3:
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
    if plan.zero_stage == 3 and request.mixed_precision and not lora:
        working_copies = gather
        gather = 0.0

    # --- activations and logits ----------------------------------------------------------
    setting = act.Setting(
        batch=request.batch_size,
        seq=request.seq_len,
        act_bytes=p,
        residual_bytes=residual,
        autocast=autocast,
        attention=request.attention,
        training=True,
        frozen_base=lora,
        plan=plan,
        lora_targets=targets,
        lora_rank=request.lora.rank if lora else 0,
    )
    full_layers = sum(
        count * act.training_layer_bytes(arch, setting, index) for index, count in arch.layer_kinds
    )
    one_layer = max(act.training_layer_bytes(arch, setting, i) for i in _layer_samples(arch))
    working = max(act.backward_layer_working_bytes(arch, setting, i) for i in _layer_samples(arch))
    model_level = act.model_level_bytes(arch, setting)
    if request.gradient_checkpointing:
        kept = arch.num_layers * act.checkpointed_layer_bytes(arch, setting) + model_level
        recompute = one_layer
        notes.add(
            gettext_noop(
                "Gradient checkpointing keeps each layer's input and recomputes one layer at a time "
                "in backward."
            ),
            gettext_noop(
                "Chen et al. 2016 (arXiv:1604.06174); transformers gradient_checkpointing_enable()"
            ),
        )
    else:
        kept = full_layers + model_level
        recompute = 0.0
    vocab_local = arch.vocab_size / plan.tp
    logits_forward = (
        tokens * vocab_local * ((FP32 + FP32) if p == FP32 and not autocast else (p + FP32 + FP32))
    )
    logits_backward = tokens * vocab_local * 3 * FP32
    if arch.final_logit_softcapping:
        logits_forward += 2 * tokens * vocab_local * p
        logits_backward += tokens * vocab_local * p
    notes.add(
        gettext_noop(
            "Loss over every position with logits upcast to fp32 (transformers ForCausalLMLoss); the "
            "backward of cross-entropy holds three fp32 logit-sized tensors at once."
        ),
        gettext_noop(
            "transformers loss_utils.ForCausalLMLoss; PyTorch log_softmax/nll_loss backward"
        ),
    )

    persistent = weights_resident + master + optimizer_states + gather
    adapters_bytes = adapters / shard_model * FP32
    persistent += adapters_bytes
    phases: dict[str, Breakdown] = {}
    common = {
        "master_weights": int(master),
        "optimizer_states": int(optimizer_states),
        "adapters": int(adapters_bytes),
        "quantization_overhead": base.quantization_overhead,
    }
    weights_fwd = int(weights_resident + working_copies + gather)
    weights_bwd = weights_fwd
    if autocast and request.gradient_checkpointing and not lora and plan.zero_stage != 3:
        # Autocast's cache of cast weights is dropped when the autocast region ends; with
        # checkpointing nothing inside a layer keeps them, so backward (which re-casts one layer
        # at a time) holds only the LM head's copy, which autograd saved outside the layers.
        weights_bwd = int(weights_resident + gather + arch.lm_head_params / plan.tp * p)
    phases["forward (loss)"] = Breakdown(
        weights=weights_fwd, activations=int(kept), logits=int(logits_forward), **common
    )
    phases["backward (start)"] = Breakdown(
        weights=weights_bwd,
        activations=int(kept + recompute + (working if recompute else 0)),
        logits=int(logits_backward),
        **common,
    )
    phases["backward (end)"] = Breakdown(
        weights=int(weights_resident + gather),
        activations=int(working + (recompute if request.gradient_checkpointing else 0)),
        gradients=int(gradients),
        **common,
    )
    phases["optimizer step"] = Breakdown(
        weights=int(weights_resident),
        gradients=int(gradients),
        optimizer_states=int(optimizer_states + step_temp),
        **{k: v for k, v in common.items() if k != "optimizer_states"},
    )
    phase, peak_parts = max(phases.items(), key=lambda item: item[1].total())
    result = _finish(
        request, arch, peak_parts, phase=phase, trainable=int(trainable), notes=notes, training=True
    )
    return result


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

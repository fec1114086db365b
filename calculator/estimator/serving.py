"""llama.cpp and vLLM requests: the engines' options a request describes, and their load-time
accounting (``runtimes.llama_cpp``, ``runtimes.vllm``) as an estimate's result."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture
from calculator.estimator.checkpoint import (
    CHECKPOINT_NOTE,
    CHECKPOINT_SOURCE,
    checkpoint_vllm_quantization,
    checkpoint_weight_bytes,
    dtype_summary,
)
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.overheads import CUDA_CONTEXT_SOURCE, cuda_context_bytes
from calculator.estimator.resolve import resolve_architecture
from calculator.estimator.runtimes.llama_cpp import (
    GgufLayout,
    LlamaCppOptions,
    estimate_llama_cpp,
    gguf_layout,
    recurrent_cells,
    recurrent_layer_count,
)
from calculator.estimator.runtimes.vllm import VllmOptions, estimate_vllm
from calculator.estimator.schemas import Breakdown, EstimateRequest, EstimateResult

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
    options = request.llama_cpp
    if options is None:
        options = LlamaCppOptions(
            n_ctx=request.seq_len * request.batch_size, n_parallel=request.batch_size
        )
    if options.gguf_type is None:
        return options.for_model(resolve_architecture(request.model))
    return options


def llama_cpp_layout(request: EstimateRequest) -> GgufLayout:
    """The request's GGUF file as llama.cpp places it, from the memo the estimate reads: the
    lever searches pass it on instead of looking it up for every trial."""
    arch = resolve_architecture(request.model)
    return gguf_layout(arch, llama_cpp_options(request).file_type(arch))


def vllm_options(request: EstimateRequest) -> VllmOptions:
    """vLLM's options for one tensor-parallel rank of the request; without a ``quantization``,
    what the checkpoint's quantization_config says (as vLLM reads it)."""
    settings = request.vllm
    if settings is None or settings.gpu_memory_bytes is None:  # the request validator's job
        raise ValueError("the vllm runtime needs vllm.gpu_memory_bytes")
    quantization = settings.quantization or checkpoint_vllm_quantization(request)
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


def llama_cpp_result(request: EstimateRequest, arch: Architecture, notes: Notes) -> EstimateResult:
    """llama.cpp's load-time buffers on the GPU (model, KV cache and the recurrent states of
    hybrid/state-space layers, compute) plus the CUDA context; what stays on the host is
    ``host_bytes``."""
    options = llama_cpp_options(request)
    loaded = estimate_llama_cpp(arch, options, devices=request.num_gpus)
    notes.add(
        gettext_noop(
            "llama.cpp with a %(gguf)s GGUF file (%(bpw)s bits per weight), a %(n_ctx)s-token "
            "context in %(slots)s slot(s), K cache %(k)s, V cache %(v)s, flash attention "
            "%(fa)s, %(ngl)s of %(layers)s layers on the GPU (the output layer counts as one)."
        ),
        LLAMA_CPP_SOURCE,
        gguf=loaded.gguf_type,
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
    # Per GPU: the one that runs out first, when the layers are split over several.
    binding = loaded.binding_device(options.device_memory_bytes)
    if request.num_gpus > 1 and binding is not None:
        notes.add(
            gettext_noop(
                "llama.cpp splits the layers over %(n)s GPUs (%(mode)s); the figures are those "
                "of %(device)s, the GPU with the least room left: %(layers)s of the layer slots."
            ),
            LLAMA_CPP_SOURCE,
            n=request.num_gpus,
            mode=f"-sm {options.split_mode}",
            device=binding.name,
            layers=binding.layers,
        )
        breakdown = Breakdown(
            weights=binding.model,
            kv_cache=binding.kv + binding.recurrent,
            activations=binding.compute,
            cuda_context=context if binding.layers else 0,
        )
    else:
        breakdown = Breakdown(
            weights=loaded.model_buffer.gpu,
            # The RS buffer sits beside the KV buffer, on the same devices (llama_memory_hybrid).
            kv_cache=loaded.kv_buffer.gpu + loaded.recurrent_buffer.gpu,
            activations=loaded.compute_buffer.gpu,
            cuda_context=context,
        )
    return EstimateResult(
        breakdown=breakdown,
        peak_allocated_bytes=breakdown.total() - breakdown.cuda_context,
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


def vllm_result(request: EstimateRequest, arch: Architecture, notes: Notes) -> EstimateResult:
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
            dtypes=dtype_summary(request),
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

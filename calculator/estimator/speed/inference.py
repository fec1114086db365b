"""Inference speed: the bytes each decode step streams and where they live, decode and prefill
time, and the runtime's fitted efficiency (llama.cpp, vLLM, transformers)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from calculator.estimator.architecture import Architecture
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.runtimes.llama_cpp import LlamaCppResult, gguf_layout
from calculator.estimator.runtimes.vllm import VllmResult
from calculator.estimator.schemas import EstimateRequest, EstimateResult
from calculator.estimator.speed.hardware import (
    DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S,
    GB,
    LLAMA_CPP_HOST_FITTED_RUNS,
    LLAMA_CPP_UBATCH,
    Efficiency,
    GpuPerformance,
    Runtime,
    _Frozen,
    efficiency_for,
    peak_tflops,
)
from calculator.estimator.speed.result import SeriesPoint, SpeedResult
from calculator.estimator.speed.roofline import (
    expert_read_fraction,
    forward_flops_per_token,
    step_seconds,
    tensor_parallel_seconds,
    weight_read_fraction,
)


class _Traffic(_Frozen):
    weight_gpu_bytes: float
    weight_host_bytes: float
    expert_bytes: tuple[float, float] | None = Field(
        default=None,
        description="The routed experts within the GPU and host weights, where the runtime "
        "says where they are (llama.cpp); None: read shares from the parameter counts.",
    )
    host_moe_layers: float = Field(
        default=0.0, description="MoE layers whose routed experts run on the CPU (llama.cpp)."
    )
    kv_bytes_per_token: float = Field(description="Per sequence and context token, all GPUs.")
    kv_host_share: float = 0.0
    kv_window_share: float = Field(
        default=0.0, description="Share of kv_bytes_per_token in sliding-window layers."
    )
    kv_window_tokens: int | None = Field(default=None, description="Their window, in tokens.")
    total_params: int
    active_params: int
    precision: str
    tensor_parallel: int
    sequential_gpus: int = Field(description="GPUs that hold layer ranges and run in turn.")


def token_embedding_bytes(arch: Architecture, gguf_type: str) -> int:
    """Bytes of the GGUF token_embd tensor (from the file's layout, remembered per architecture
    and file type)."""
    return gguf_layout(arch, gguf_type).token_embd_bytes


def _traffic(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    runtime: Runtime,
    llama_cpp: LlamaCppResult | None,
    vllm: VllmResult | None,
) -> _Traffic:
    tp = request.tensor_parallel
    if runtime == "llama_cpp" and llama_cpp is not None:
        embedding = token_embedding_bytes(arch, llama_cpp.gguf_type)
        # llama.cpp keeps token_embd in host memory and reads one row per token (get_rows).
        host = max(0, llama_cpp.model_buffer.host - embedding)
        kv_total = llama_cpp.kv_buffer.gpu + llama_cpp.kv_buffer.host
        kv_per_token = kv_total / max(1, llama_cpp.n_ctx_padded)
        experts = llama_cpp.expert_bytes
        return _Traffic(
            weight_gpu_bytes=llama_cpp.model_buffer.gpu,
            weight_host_bytes=host,
            expert_bytes=(experts.gpu, experts.host) if experts.total else None,
            host_moe_layers=(
                arch.moe_layer_count * experts.host / experts.total if experts.total else 0.0
            ),
            kv_bytes_per_token=kv_per_token,
            kv_host_share=llama_cpp.kv_buffer.host / kv_total if kv_total else 0.0,
            total_params=result.params_total,
            active_params=result.params_active,
            precision=llama_cpp.gguf_type,
            tensor_parallel=1,
            sequential_gpus=1,
        )
    if runtime == "vllm" and vllm is not None:
        return _vllm_traffic(arch, request, result, vllm)
    weights_per_gpu = result.breakdown.weights
    tokens = max(1, request.batch_size * request.seq_len)
    kv_per_token = result.breakdown.kv_cache * tp / tokens
    # Without tensor parallelism, transformers' device_map="auto" places layer ranges on the GPUs
    # and runs them one after another (Accelerate big-model inference docs).
    sequential = request.num_gpus // tp if request.mode == "inference" else 1
    return _Traffic(
        weight_gpu_bytes=weights_per_gpu * tp * sequential,
        weight_host_bytes=0.0,
        kv_bytes_per_token=kv_per_token * sequential,
        total_params=result.params_total,
        active_params=result.params_active,
        precision=request.precision,
        tensor_parallel=tp,
        sequential_gpus=sequential,
    )


def _vllm_traffic(
    arch: Architecture, request: EstimateRequest, result: EstimateResult, vllm: VllmResult
) -> _Traffic:
    """vLLM reserves its KV pool at start-up, but a decode step reads only the blocks of the
    sequences it decodes: PagedAttention fetches every cached block of each sequence (Kwon et
    al. 2023, arXiv:2309.06180 §4.1), so the read is the per-token KV size times the context,
    capped at the window in sliding-window layers."""
    tp = request.tensor_parallel
    sliding = arch.sliding_layer_count if arch.sliding_window else 0
    return _Traffic(
        weight_gpu_bytes=vllm.weights * tp,
        weight_host_bytes=0.0,
        kv_bytes_per_token=vllm.kv_bytes_per_token * tp,
        kv_window_share=sliding / arch.num_layers if arch.num_layers else 0.0,
        kv_window_tokens=arch.sliding_window if sliding else None,
        total_params=result.params_total,
        active_params=result.params_active,
        precision=request.precision,
        tensor_parallel=tp,
        sequential_gpus=1,
    )


def kv_read_tokens(traffic: _Traffic, context: float) -> float:
    """Context tokens whose K and V one step reads per sequence, in units of all layers' KV:
    full-attention layers read the whole context, sliding-window layers at most their window."""
    windowed = min(context, traffic.kv_window_tokens or context)
    return context * (1 - traffic.kv_window_share) + windowed * traffic.kv_window_share


def _weights_read(arch: Architecture, traffic: _Traffic, batch: int) -> tuple[float, float]:
    """Weight bytes one decode step streams from the GPU and from host RAM: every dense tensor,
    and of the routed experts the share the batch touches. Where the runtime says which bytes
    are experts (llama.cpp, with experts left in RAM by --n-cpu-moe), that share applies to
    them alone; otherwise to the whole, from the parameter counts."""
    if traffic.expert_bytes is None:
        share = weight_read_fraction(arch, traffic.total_params, traffic.active_params, batch)
        return traffic.weight_gpu_bytes * share, traffic.weight_host_bytes * share
    fraction = expert_read_fraction(arch, batch)
    gpu_experts, host_experts = traffic.expert_bytes
    gpu = traffic.weight_gpu_bytes - gpu_experts * (1 - fraction)
    host = traffic.weight_host_bytes - host_experts * (1 - fraction)
    return gpu, max(host, 0.0)


def _decode_step(
    arch: Architecture,
    traffic: _Traffic,
    gpu: GpuPerformance,
    runtime: Runtime,
    efficiency: Efficiency,
    host_bandwidth_gb_s: float,
    *,
    batch: int,
    context: float,
) -> tuple[float, Literal["memory", "compute"]]:
    """Seconds for one decode step of ``batch`` sequences with ``context`` tokens cached each."""
    tp = traffic.tensor_parallel
    gpu_weights, host_weights = _weights_read(arch, traffic, batch)
    kv = traffic.kv_bytes_per_token * kv_read_tokens(traffic, context) * batch
    gpu_bytes = (gpu_weights + kv * (1 - traffic.kv_host_share)) / tp
    host_bytes = host_weights + kv * traffic.kv_host_share
    flops = batch * forward_flops_per_token(arch, traffic.active_params, context) / tp
    seconds, bound = step_seconds(
        gpu_bytes=gpu_bytes,
        host_bytes=host_bytes,
        flops=flops,
        gpu=gpu,
        tflops=peak_tflops(gpu, traffic.precision, runtime),
        efficiency=efficiency,
        host_bandwidth_gb_s=host_bandwidth_gb_s,
        compute_efficiency=efficiency.prefill_compute,
    )
    comm = tensor_parallel_seconds(batch, arch, tp, gpu, efficiency)
    host_moe = traffic.host_moe_layers * efficiency.host_moe_layer_s
    return seconds + comm + host_moe + efficiency.step_overhead_s, bound


def _prefill_seconds(
    arch: Architecture,
    traffic: _Traffic,
    gpu: GpuPerformance,
    runtime: Runtime,
    efficiency: Efficiency,
    host_bandwidth_gb_s: float,
    *,
    tokens: int,
    sequences: int = 1,
) -> float | None:
    """Seconds to process ``tokens`` prompt tokens per sequence for ``sequences`` sequences.
    Causal attention sees tokens/2 of context on average."""
    tflops = peak_tflops(gpu, traffic.precision, runtime)
    if not tflops:
        return None
    tp = traffic.tensor_parallel
    flops = sequences * tokens * forward_flops_per_token(arch, traffic.active_params, tokens / 2)
    if runtime == "llama_cpp" and traffic.precision not in {"F32", "F16", "BF16"}:
        tflops *= efficiency.quantized_prefill
    seconds, _ = step_seconds(
        gpu_bytes=traffic.weight_gpu_bytes / tp,
        host_bytes=traffic.weight_host_bytes,
        flops=flops / tp,
        gpu=gpu,
        tflops=tflops,
        efficiency=efficiency,
        host_bandwidth_gb_s=host_bandwidth_gb_s,
        compute_efficiency=efficiency.prefill_compute,
    )
    if runtime == "llama_cpp" and gpu.count > 1:
        # llama.cpp pipelines micro-batches through GPUs that hold layer ranges (PR #6017,
        # "pipeline parallelism"): m micro-batches on n stages take (m + n - 1) / (m·n) of the
        # serial time (the GPipe bubble, Huang et al. 2019, arXiv:1811.06965 §2.3).
        micro = max(1, -(-tokens // LLAMA_CPP_UBATCH))
        seconds *= (micro + gpu.count - 1) / (micro * gpu.count)
    comm = tensor_parallel_seconds(sequences * tokens, arch, tp, gpu, efficiency)
    return seconds + comm + efficiency.step_overhead_s


def _note_efficiency(eff: Efficiency, runtime: Runtime, backend: str, notes: Notes) -> None:
    notes.add(
        gettext_noop(
            "Decode reaches %(bandwidth)s%% of the GPU's memory bandwidth and prefill "
            "%(compute)s%% of its dense tensor throughput, plus %(overhead)s ms per step "
            "(%(runtime)s on %(backend)s, fitted to %(rows)s published measurements)."
        ),
        gettext_noop("validation/fit_speed.py; roofline: Williams et al. 2009, CACM 52(4)"),
        bandwidth=round(eff.decode_bandwidth * 100),
        compute=round(eff.prefill_compute * 100),
        overhead=round(eff.step_overhead_s * 1000, 2),
        runtime=runtime,
        backend=backend,
        rows=eff.fitted_rows,
    )


def _host_slowdown(
    arch: Architecture,
    traffic: _Traffic,
    gpu: GpuPerformance,
    runtime: Runtime,
    eff: Efficiency,
    host_bw: float,
    single: float,
    notes: Notes,
) -> float | None:
    """llama.cpp with layers in system RAM: one decode step's time ÷ the same with every layer
    on the GPU."""
    if not traffic.weight_host_bytes:
        return None
    on_gpu = traffic.model_copy(
        update={
            "weight_gpu_bytes": traffic.weight_gpu_bytes + traffic.weight_host_bytes,
            "weight_host_bytes": 0.0,
            "expert_bytes": traffic.expert_bytes and (sum(traffic.expert_bytes), 0.0),
            "host_moe_layers": 0.0,
        }
    )
    all_gpu, _ = _decode_step(arch, on_gpu, gpu, runtime, eff, host_bw, batch=1, context=0)
    slowdown = single / all_gpu
    if traffic.host_moe_layers and eff.host_moe_layer_s:
        notes.add(
            gettext_noop(
                "The routed experts of %(layers)s MoE layers run on the CPU: each such layer "
                "adds about %(ms)s ms to every generated token (the hand-off between GPU and "
                "CPU), fitted with the RAM's share to %(runs)s published runs."
            ),
            gettext_noop("validation/llama_cpp_offload.py"),
            layers=round(traffic.host_moe_layers),
            ms=round(eff.host_moe_layer_s * 1000, 2),
            runs=LLAMA_CPP_HOST_FITTED_RUNS,
        )
    notes.add(
        gettext_noop(
            "%(host_gb)s GB of weights stay in system RAM and are read at %(host_bw)s GB/s "
            "(%(share)s%% achieved): generation is %(slowdown)s× slower than with every "
            "layer on the GPU."
        ),
        gettext_noop("llama.cpp runs CPU-held layers on the CPU (-ngl); DDR5 peak: JEDEC JESD79-5"),
        host_gb=round(traffic.weight_host_bytes / GB, 1),
        host_bw=host_bw,
        share=round(eff.host_bandwidth * 100),
        slowdown=round(slowdown, 1),
    )
    return slowdown


def _note_limits(prefill: float | None, traffic: _Traffic, notes: Notes) -> None:
    if prefill is None:
        notes.add(
            gettext_noop(
                "The catalogue has no dense tensor throughput for this GPU, so prompt "
                "processing speed is not estimated."
            ),
            gettext_noop("presets/GPUS_SOURCES.md"),
        )
    if traffic.sequential_gpus > 1:
        notes.add(
            gettext_noop(
                "Layers are split across %(gpus)s GPUs that work one after another, so more GPUs "
                "add memory but not decode speed."
            ),
            gettext_noop("Accelerate big-model inference docs (device_map); llama.cpp -sm layer"),
            gpus=traffic.sequential_gpus,
        )


def inference_speed(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    notes: Notes,
    *,
    runtime: Runtime,
    llama_cpp: LlamaCppResult | None,
    vllm: VllmResult | None,
    prompt_tokens: int | None,
    concurrency: int | None,
    efficiency: Efficiency | None,
    host_bandwidth_gb_s: float,
) -> SpeedResult:
    """Decode tokens/s (one sequence, empty and full context; the batch together at half the
    context), prefill tokens/s and time to first token, each a roofline step."""
    backend = gpu.backend
    host_bw = host_bandwidth_gb_s
    eff = efficiency or efficiency_for(runtime, backend, gpu.memory_class)
    _note_efficiency(eff, runtime, backend, notes)
    traffic = _traffic(arch, request, result, runtime, llama_cpp, vllm)
    prompt = prompt_tokens or request.seq_len
    batch = concurrency or request.batch_size
    single, bound = _decode_step(arch, traffic, gpu, runtime, eff, host_bw, batch=1, context=0)
    full, _ = _decode_step(
        arch, traffic, gpu, runtime, eff, host_bw, batch=1, context=request.seq_len
    )
    everyone, bound_total = _decode_step(
        arch, traffic, gpu, runtime, eff, host_bw, batch=batch, context=request.seq_len / 2
    )
    prefill = _prefill_seconds(arch, traffic, gpu, runtime, eff, host_bw, tokens=prompt)
    slowdown = _host_slowdown(arch, traffic, gpu, runtime, eff, host_bw, single, notes)
    _note_limits(prefill, traffic, notes)
    return SpeedResult(
        runtime=runtime,
        backend=backend,
        decode_tokens_per_s=1 / single,
        decode_tokens_per_s_full_context=1 / full,
        decode_tokens_per_s_total=batch / everyone,
        prefill_tokens_per_s=prompt / prefill if prefill else None,
        time_to_first_token_s=prefill,
        prompt_tokens=prompt,
        decode_bound=bound_total if batch > 1 else bound,
        host_slowdown=slowdown,
        assumptions=notes.items,
    )


def static_batch_seconds(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    *,
    input_tokens: int,
    output_tokens: int,
    runtime: Runtime = "vllm",
    vllm: VllmResult | None = None,
    efficiency: Efficiency | None = None,
) -> float:
    """Seconds for a batch of ``request.batch_size`` requests to read ``input_tokens`` and write
    ``output_tokens`` each: one prefill, then ``output_tokens`` decode steps whose KV read grows
    linearly, so the mean step (at input + output/2 tokens of context) stands for all of them."""
    eff = efficiency or efficiency_for(runtime, gpu.backend, gpu.memory_class)
    traffic = _traffic(arch, request, result, runtime, None, vllm)
    host_bw = DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S
    batch = request.batch_size
    prefill = _prefill_seconds(
        arch, traffic, gpu, runtime, eff, host_bw, tokens=input_tokens, sequences=batch
    )
    step, _ = _decode_step(
        arch,
        traffic,
        gpu,
        runtime,
        eff,
        host_bw,
        batch=batch,
        context=input_tokens + output_tokens / 2,
    )
    return (prefill or 0.0) + output_tokens * step


def speed_series(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    *,
    runtime: Runtime = "transformers",
    llama_cpp: LlamaCppResult | None = None,
    vllm: VllmResult | None = None,
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
    efficiency: Efficiency | None = None,
) -> list[SeriesPoint]:
    """Decode tokens/s of all sequences together against the batch size, each step at half the
    chosen context (the mean over a generation that fills it). Memory against the context length
    is not a speed series: the page charts the estimate itself at each length (and under vLLM,
    whose pool does not grow with the context, the requests it holds)."""
    eff = efficiency or efficiency_for(runtime, gpu.backend, gpu.memory_class)
    traffic = _traffic(arch, request, result, runtime, llama_cpp, vllm)
    host_bw = gpu.bandwidth_gb_s if gpu.unified_memory else DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S
    throughput = []
    for batch in batch_sizes:
        seconds, _ = _decode_step(
            arch, traffic, gpu, runtime, eff, host_bw, batch=batch, context=request.seq_len / 2
        )
        throughput.append(SeriesPoint(x=batch, y=batch / seconds))
    return throughput

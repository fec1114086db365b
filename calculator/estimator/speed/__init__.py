"""How fast: tokens per second, time to first token, training throughput and time to train.

A roofline per phase (Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4)): a step takes
the longer of (bytes it must move ÷ achieved memory bandwidth) and (FLOPs it must do ÷ achieved
dense tensor throughput), plus interconnect time and a fixed per-step cost. "Achieved" is the
datasheet peak times an efficiency factor per runtime, GPU backend and memory class (GDDR, HBM,
unified), fitted to published measurements by ``validation/fit_speed.py`` (training split) and
checked on held-out rows (``tests/estimator/test_speed_validation.py``). Every factor used is
returned as an assumption.

FLOP counts per token follow Chowdhery et al. 2022 (PaLM, arXiv:2204.02311) Appendix B: a forward
pass is 2·N + 4·L·H·Q·T for N (active) weights, L attention layers, H heads of size Q and T tokens
of context; training is three times the forward (6·N + 12·L·H·Q·T).

- ``hardware``: the GPUs' figures, the fitted efficiencies, the throughput for a precision;
- ``roofline``: FLOPs, bytes read, one step's time, collectives;
- ``inference``: decode and prefill per runtime, static batches, the batch-size series;
- ``training``: training throughput, time and cost, and what CPU offload adds.
"""

from __future__ import annotations

from calculator.estimator.architecture import Architecture
from calculator.estimator.notes import Notes
from calculator.estimator.runtimes.llama_cpp import LlamaCppResult
from calculator.estimator.runtimes.vllm import VllmResult
from calculator.estimator.schemas import TRAINING_MODES, EstimateRequest, EstimateResult
from calculator.estimator.speed.hardware import (
    DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S,
    DEFAULT_SERVER_MEMORY_BANDWIDTH_GB_S,
    FITTED,
    FP32_RATE_OF_BF16,
    GB,
    GPUS_PER_NODE,
    LLAMA_CPP_UBATCH,
    TERA,
    TRANSFORMERS_STEP_OVERHEAD_S,
    Backend,
    Efficiency,
    GpuPerformance,
    Interconnect,
    MemoryClass,
    Runtime,
    Vendor,
    efficiency_for,
    pcie_fallback_gb_s,
    peak_tflops,
)
from calculator.estimator.speed.inference import (
    inference_speed,
    kv_read_tokens,
    speed_series,
    static_batch_seconds,
    token_embedding_bytes,
)
from calculator.estimator.speed.result import SeriesPoint, SpeedResult
from calculator.estimator.speed.roofline import (
    attention_layers,
    expert_read_fraction,
    forward_flops_per_token,
    ring_allreduce_seconds,
    step_seconds,
    tensor_parallel_seconds,
    weight_read_fraction,
)
from calculator.estimator.speed.training import (
    cpu_optimizer_bytes_per_param,
    training_flops_per_token,
    training_speed,
)

__all__ = [
    "DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S",
    "DEFAULT_SERVER_MEMORY_BANDWIDTH_GB_S",
    "FITTED",
    "FP32_RATE_OF_BF16",
    "GB",
    "GPUS_PER_NODE",
    "LLAMA_CPP_UBATCH",
    "TERA",
    "TRANSFORMERS_STEP_OVERHEAD_S",
    "Backend",
    "Efficiency",
    "GpuPerformance",
    "Interconnect",
    "MemoryClass",
    "Runtime",
    "SeriesPoint",
    "SpeedResult",
    "Vendor",
    "attention_layers",
    "cpu_optimizer_bytes_per_param",
    "efficiency_for",
    "estimate_speed",
    "expert_read_fraction",
    "forward_flops_per_token",
    "kv_read_tokens",
    "pcie_fallback_gb_s",
    "peak_tflops",
    "ring_allreduce_seconds",
    "speed_series",
    "static_batch_seconds",
    "step_seconds",
    "tensor_parallel_seconds",
    "token_embedding_bytes",
    "training_flops_per_token",
    "weight_read_fraction",
]


def estimate_speed(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    *,
    runtime: Runtime = "transformers",
    llama_cpp: LlamaCppResult | None = None,
    vllm: VllmResult | None = None,
    prompt_tokens: int | None = None,
    train_tokens: float | None = None,
    price_per_gpu_hour: float | None = None,
    host_memory_bandwidth_gb_s: float | None = None,
    concurrency: int | None = None,
    efficiency: Efficiency | None = None,
) -> SpeedResult:
    """Speed for the request as ``estimate`` sized it, on ``gpu.count`` GPUs of one model.

    ``result`` is ``estimate(request)``; pass ``llama_cpp`` (``estimate_llama_cpp``) for
    runtime="llama_cpp" and optionally ``vllm`` (``estimate_vllm``) for runtime="vllm".
    ``concurrency`` (default: the request's batch size) is how many sequences decode together
    (llama-server -np, vLLM's running requests) for ``decode_tokens_per_s_total``."""
    notes = Notes()
    host_bw = host_memory_bandwidth_gb_s or (
        gpu.bandwidth_gb_s if gpu.unified_memory else DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S
    )
    if request.mode in TRAINING_MODES:
        server_bw = host_memory_bandwidth_gb_s or (
            DEFAULT_SERVER_MEMORY_BANDWIDTH_GB_S if gpu.memory_class == "hbm" else host_bw
        )
        return training_speed(
            arch,
            request,
            result,
            gpu,
            notes,
            efficiency,
            train_tokens,
            price_per_gpu_hour,
            host_bandwidth_gb_s=server_bw,
        )
    return inference_speed(
        arch,
        request,
        result,
        gpu,
        notes,
        runtime=runtime,
        llama_cpp=llama_cpp,
        vllm=vllm,
        prompt_tokens=prompt_tokens,
        concurrency=concurrency,
        efficiency=efficiency,
        host_bandwidth_gb_s=host_bw,
    )

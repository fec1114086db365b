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
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from calculator.estimator.architecture import Architecture
from calculator.estimator.messages import gettext_noop
from calculator.estimator.parallelism import plan_for
from calculator.estimator.runtimes.llama_cpp import LlamaCppResult, gguf_layout
from calculator.estimator.runtimes.vllm import VllmResult
from calculator.estimator.schemas import TRAINING_MODES, Assumption, EstimateRequest, EstimateResult

Runtime = Literal["transformers", "llama_cpp", "vllm"]
Interconnect = Literal["nvlink", "infinity_fabric", "pcie", "ethernet", "unified", "none"]
Vendor = Literal["nvidia", "amd", "intel", "apple", "other"]
Backend = Literal["cuda", "rocm", "metal", "sycl"]
MemoryClass = Literal["hbm", "gddr", "unified"]

GB = 1e9
TERA = 1e12

# Dual-channel DDR5-5600, the common desktop configuration: JEDEC JESD79-5 DDR5-5600 moves
# 5600 MT/s × 8 bytes per 64-bit channel, × 2 channels = 89.6 GB/s peak.
DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S = 89.6
# The host of data-centre (HBM) GPUs in training: one server socket of eight DDR4-3200 channels,
# JEDEC JESD79-4: 3200 MT/s × 8 bytes × 8 channels = 204.8 GB/s (an A100 DGX has two of them).
DEFAULT_SERVER_MEMORY_BANDWIDTH_GB_S = 204.8
# GPUs per machine when a job spans several (DGX/HGX nodes hold eight), sharing its RAM and CPUs.
GPUS_PER_NODE = 8
# NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): TF32 156 TFLOPS
# dense vs BF16 312, so fp32 matmuls (TF32 tensor cores) run at half the BF16 rate.
FP32_RATE_OF_BF16 = 0.5
# llama.cpp's default micro-batch (-ub 512), the unit its pipeline passes between GPUs.
LLAMA_CPP_UBATCH = 512
# Assumed, not fitted (no published transformers generate() timings were collected): eager
# PyTorch launches a few hundred kernels per token from Python.
TRANSFORMERS_STEP_OVERHEAD_S = 0.008


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GpuPerformance(_Frozen):
    """What the speed estimate needs to know about one GPU model (from the catalogue)."""

    bandwidth_gb_s: float = Field(gt=0, description="Peak memory bandwidth, GB/s (10^9).")
    bf16_tflops: float | None = Field(default=None, gt=0, description="Dense BF16 tensor TFLOPS.")
    fp16_tflops: float | None = Field(default=None, gt=0, description="Dense FP16 tensor TFLOPS.")
    fp8_tflops: float | None = Field(default=None, gt=0, description="Dense FP8 tensor TFLOPS.")
    int8_tops: float | None = Field(default=None, gt=0, description="Dense INT8 tensor TOPS.")
    interconnect: Interconnect = "pcie"
    interconnect_gb_s: float | None = Field(
        default=None, gt=0, description="GPU-to-GPU bandwidth per direction, GB/s."
    )
    count: int = Field(default=1, ge=1, le=65_536)
    unified_memory: bool = False
    vendor: Vendor = "nvidia"
    memory_type: str = Field(default="", description="HBM3, GDDR6X, LPDDR5 ... (catalogue).")

    @property
    def memory_class(self) -> MemoryClass:
        """Data-centre HBM parts and GDDR cards reach different shares of their bandwidth in
        the same runtime (lower clocks, larger launch latency), so factors are fitted per class."""
        if self.unified_memory:
            return "unified"
        return "hbm" if self.memory_type.upper().startswith("HBM") else "gddr"

    @property
    def host_link_gb_s(self) -> float | None:
        """GPU-to-host bandwidth per direction: the card's PCIe figure where the catalogue
        records one, else PCIe 4.0 x16 (NVLink parts reach their host over PCIe too); none for
        unified memory, where host and GPU share one memory."""
        if self.unified_memory:
            return None
        if self.interconnect == "pcie" and self.interconnect_gb_s:
            return self.interconnect_gb_s
        return pcie_fallback_gb_s()

    @property
    def backend(self) -> Backend:
        if self.unified_memory or self.vendor == "apple":
            return "metal"
        return {"amd": "rocm", "intel": "sycl"}.get(self.vendor, "cuda")  # type: ignore[return-value]


class Efficiency(_Frozen):
    """Fractions of datasheet peaks one runtime reaches on one backend, and its fixed costs."""

    decode_bandwidth: float = Field(gt=0, le=1, description="Achieved / peak bandwidth, decode.")
    prefill_compute: float = Field(gt=0, le=1, description="Achieved / peak FLOPS, prefill.")
    compute_ceiling_tflops: float | None = Field(
        default=None,
        gt=0,
        description="A runtime's own limit on matmul throughput, whatever the GPU: achieved "
        "FLOPS = 1 / (1 / (peak × prefill_compute) + 1 / ceiling).",
    )
    step_overhead_s: float = Field(ge=0, description="Fixed cost per decode step (launches).")
    quantized_prefill: float = Field(
        default=1.0, gt=0, le=2, description="llama.cpp: quantized ÷ F16 prompt speed."
    )
    training_flops: float = Field(
        default=0.4, gt=0, le=1, description="Hardware FLOPs utilisation in training."
    )
    training_traffic: float = Field(
        default=0.0,
        ge=0,
        description="Memory-bound training traffic, in passes over the 34·h bytes of activations "
        "each layer stores per token (Korthikanti et al. 2022, arXiv:2205.05198 §4.1).",
    )
    host_bandwidth: float = Field(
        default=0.6, gt=0, le=1, description="Achieved / peak host RAM bandwidth (CPU layers)."
    )
    allreduce_latency_s: float = Field(default=20e-6, ge=0)
    fitted_rows: int = Field(default=0, ge=0, description="Published rows these values fit.")
    fitted_on: str = Field(default="", description="Which published rows fixed these values.")


# Values printed by `validation/fit_speed.py` from the training split of
# validation/published/speed_*.json; rerun it and copy its output here when rows change.
FITTED: dict[tuple[str, str], Efficiency] = {
    ("llama_cpp", "cuda/gddr"): Efficiency(
        decode_bandwidth=0.84,
        prefill_compute=0.95,
        compute_ceiling_tflops=160,
        step_overhead_s=0.002,
        quantized_prefill=1.1,
        fitted_rows=65,
        fitted_on="35 tg, 30 pp published rows",
    ),
    ("llama_cpp", "cuda/hbm"): Efficiency(
        decode_bandwidth=0.5,
        prefill_compute=1.0,
        compute_ceiling_tflops=220,
        step_overhead_s=0.0028,
        quantized_prefill=0.5,
        fitted_rows=28,
        fitted_on="14 tg, 14 pp published rows",
    ),
    ("llama_cpp", "metal/unified"): Efficiency(
        decode_bandwidth=0.82,
        prefill_compute=0.5,
        step_overhead_s=0.0028,
        fitted_rows=3,
        fitted_on="3 tg published rows",
    ),
    ("llama_cpp", "rocm/gddr"): Efficiency(
        decode_bandwidth=0.78,
        prefill_compute=0.55,
        compute_ceiling_tflops=120,
        step_overhead_s=0.003,
        quantized_prefill=1.1,
        fitted_rows=5,
        fitted_on="3 tg, 2 pp published rows",
    ),
    ("serving", "cuda/gddr"): Efficiency(
        decode_bandwidth=0.85,
        prefill_compute=0.54,
        step_overhead_s=0.0035,
        fitted_rows=4,
        fitted_on="1 ttft, 3 throughput published rows",
    ),
    ("serving", "cuda/hbm"): Efficiency(
        decode_bandwidth=0.75,
        prefill_compute=0.38,
        step_overhead_s=0.0025,
        fitted_rows=18,
        fitted_on="6 ttft, 12 throughput published rows",
    ),
    ("serving", "rocm/hbm"): Efficiency(
        decode_bandwidth=0.5,
        prefill_compute=0.12,
        step_overhead_s=0.003,
        fitted_rows=6,
        fitted_on="6 throughput published rows",
    ),
    ("training", "cuda/hbm"): Efficiency(
        decode_bandwidth=0.75,
        prefill_compute=0.5,
        step_overhead_s=0.001,
        training_flops=0.6,
        fitted_rows=10,
        fitted_on="10 tokens_per_s_per_gpu published rows",
    ),
}


def efficiency_for(
    runtime: Runtime | Literal["serving", "training"],
    backend: Backend,
    memory_class: MemoryClass = "gddr",
) -> Efficiency:
    """The fitted factors for a runtime, backend and memory class; CUDA's (same class, else the
    other) where a backend or class has no published rows.

    transformers decodes through the same cuBLAS/FlashAttention kernels the serving engines use, so
    it shares the serving factors, with a larger per-step cost: eager PyTorch launches every
    kernel from Python instead of replaying a CUDA graph."""
    group = "serving" if runtime in {"vllm", "transformers"} else runtime
    keys = (f"{backend}/{memory_class}", f"cuda/{memory_class}", "cuda/gddr", "cuda/hbm")
    chosen = next(FITTED[(group, key)] for key in keys if (group, key) in FITTED)
    if runtime == "transformers":
        chosen = chosen.model_copy(update={"step_overhead_s": TRANSFORMERS_STEP_OVERHEAD_S})
    return chosen


class SpeedResult(_Frozen):
    runtime: str
    backend: str
    decode_tokens_per_s: float | None = Field(description="One sequence, empty context.")
    decode_tokens_per_s_full_context: float | None = Field(
        description="One sequence with the chosen context in its KV cache."
    )
    decode_tokens_per_s_total: float | None = Field(
        description="All sequences of the batch together, at half the context on average."
    )
    prefill_tokens_per_s: float | None
    time_to_first_token_s: float | None
    prompt_tokens: int
    decode_bound: Literal["memory", "compute"] | None
    host_slowdown: float | None = Field(
        default=None,
        description="llama.cpp with layers on the CPU: decode time ÷ the same with all on the GPU.",
    )
    training_tokens_per_s_per_gpu: float | None = None
    step_time_s: float | None = None
    time_to_train_s: float | None = None
    cost: float | None = None
    assumptions: list[Assumption] = Field(default_factory=list)


# --- the pieces --------------------------------------------------------------------------------


def attention_layers(arch: Architecture) -> int:
    """Layers whose cost grows with context (attention mixers); recurrent mixers do not."""
    if not arch.mixer_kinds:
        return arch.num_layers
    return arch.mixer_kinds.count("attention")


def forward_flops_per_token(arch: Architecture, active_params: int, context_tokens: float) -> float:
    """2·N + 4·L·H·Q·T: PaLM (arXiv:2204.02311) Appendix B, forward pass only."""
    attention = 4 * attention_layers(arch) * arch.num_attention_heads * arch.head_dim
    return 2 * active_params + attention * context_tokens


def expert_read_fraction(arch: Architecture, batch: int) -> float:
    """Expected share of the experts a step touches when ``batch`` tokens each pick k of E
    experts uniformly: 1 - (1 - k/E)^batch (independent routing; real routers are skewed, so
    this is an upper bound on bytes read)."""
    if not arch.num_experts or not arch.experts_per_token:
        return 1.0
    share = arch.experts_per_token / arch.num_experts
    return float(1 - (1 - share) ** batch)


def weight_read_fraction(arch: Architecture, total: int, active: int, batch: int) -> float:
    """Share of the stored weights one decode step streams: dense weights, plus the experts the
    batch touches. With total = dense + experts and active = dense + experts·k/E,
    experts = (total - active) / (1 - k/E)."""
    if not arch.num_experts or not arch.experts_per_token or total <= active:
        return 1.0
    share = arch.experts_per_token / arch.num_experts
    experts = (total - active) / (1 - share) if share < 1 else 0.0
    dense = total - experts
    return float((dense + experts * expert_read_fraction(arch, batch)) / total)


def peak_tflops(gpu: GpuPerformance, precision: str, runtime: Runtime) -> float | None:
    """Dense tensor throughput for the math the runtime does on weights stored at ``precision``.

    vLLM runs FP8 and INT8 checkpoints as W8A8 on FP8 / INT8 tensor cores (vLLM docs,
    "Quantization: FP8 W8A8", "INT8 W8A8"); 4- and 2-bit weights are dequantized to 16-bit for the
    matmul, as is everything llama.cpp and transformers compute."""
    half = gpu.bf16_tflops or gpu.fp16_tflops
    if runtime == "llama_cpp":
        # Quantized GGUF matmuls dequantize in the kernel (MMQ); their speed relative to F16 is
        # the fitted ``quantized_prefill`` factor applied in ``_prefill_seconds``.
        return gpu.fp16_tflops or gpu.bf16_tflops
    if runtime == "vllm" and precision == "fp8" and gpu.fp8_tflops:
        return gpu.fp8_tflops
    if runtime == "vllm" and precision == "int8" and gpu.int8_tops:
        return gpu.int8_tops
    if precision == "fp32":
        return half * FP32_RATE_OF_BF16 if half else None
    if precision == "fp16":
        return gpu.fp16_tflops or gpu.bf16_tflops
    return half


def ring_allreduce_seconds(
    payload_bytes: float, ranks: int, gpu: GpuPerformance, efficiency: Efficiency
) -> float:
    """A ring all-reduce sends 2·(n-1)/n of the payload over each link (Patarasuk & Yuan 2009,
    J. Parallel Distrib. Comput. 69(2)); plus a fixed latency per call."""
    if ranks <= 1:
        return 0.0
    link = (gpu.interconnect_gb_s or pcie_fallback_gb_s()) * GB
    return 2 * (ranks - 1) / ranks * payload_bytes / link + efficiency.allreduce_latency_s


def pcie_fallback_gb_s() -> float:
    """PCIe 4.0 x16: 16 GT/s × 16 lanes × 128/130 encoding ÷ 8 = 31.5 GB/s per direction
    (PCI-SIG PCIe 4.0 base specification), used where the catalogue records no interconnect."""
    return 31.5


def tensor_parallel_seconds(
    tokens: int, arch: Architecture, tp: int, gpu: GpuPerformance, efficiency: Efficiency
) -> float:
    """Megatron-LM tensor parallelism all-reduces the activations twice per layer in the forward
    pass (Shoeybi et al. 2019, arXiv:1909.08053 §3, Fig. 3); 2-byte activations."""
    if tp <= 1:
        return 0.0
    payload = tokens * arch.hidden_size * 2
    return 2 * arch.num_layers * ring_allreduce_seconds(payload, tp, gpu, efficiency)


def step_seconds(
    *,
    gpu_bytes: float,
    host_bytes: float,
    flops: float,
    gpu: GpuPerformance,
    tflops: float | None,
    efficiency: Efficiency,
    host_bandwidth_gb_s: float,
    compute_efficiency: float,
) -> tuple[float, Literal["memory", "compute"]]:
    """max(bytes ÷ bandwidth, FLOPs ÷ throughput) on the GPU, plus the CPU-held bytes streamed from
    host RAM (llama.cpp runs CPU layers one after another with the GPU ones)."""
    memory = gpu_bytes / (gpu.bandwidth_gb_s * GB * efficiency.decode_bandwidth)
    compute = 0.0
    if tflops:
        compute = flops / (tflops * TERA * compute_efficiency)
        if efficiency.compute_ceiling_tflops:
            compute += flops / (efficiency.compute_ceiling_tflops * TERA)
    host = (
        host_bytes / (host_bandwidth_gb_s * GB * efficiency.host_bandwidth) if host_bytes else 0.0
    )
    bound: Literal["memory", "compute"] = "memory" if memory >= compute else "compute"
    return max(memory, compute) + host, bound


# --- the runtime views: bytes streamed per step and where they live -----------------------------


class _Traffic(_Frozen):
    weight_gpu_bytes: float
    weight_host_bytes: float
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
        return _Traffic(
            weight_gpu_bytes=llama_cpp.model_buffer.gpu,
            weight_host_bytes=host,
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
    share = weight_read_fraction(arch, traffic.total_params, traffic.active_params, batch)
    kv = traffic.kv_bytes_per_token * kv_read_tokens(traffic, context) * batch
    gpu_bytes = (traffic.weight_gpu_bytes * share + kv * (1 - traffic.kv_host_share)) / tp
    host_bytes = traffic.weight_host_bytes * share + kv * traffic.kv_host_share
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
    return seconds + comm + efficiency.step_overhead_s, bound


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


def training_flops_per_token(arch: Architecture, request: EstimateRequest, active: int) -> float:
    """Hardware FLOPs per trained token.

    Full training: 6·N + 12·L·H·Q·T (PaLM Appendix B). Gradient checkpointing recomputes the
    forward once more (+2·N + 4·L·H·Q·T; Chen et al. 2016, arXiv:1604.06174). LoRA/QLoRA skip the
    frozen weights' gradients, so the backward pass is one matmul per weight, not two
    (Hu et al. 2021, arXiv:2106.09685 §4.2 reports the resulting speed-up)."""
    context = request.seq_len
    forward = forward_flops_per_token(arch, active, context)
    backward = 2 * forward if request.mode in {"full_finetune", "pretrain"} else forward
    recompute = forward if request.gradient_checkpointing else 0.0
    return forward + backward + recompute


class _Notes:
    def __init__(self) -> None:
        self.items: list[Assumption] = []

    def add(self, template: str, source: str, **params: str | int | float) -> None:
        self.items.append(
            Assumption(text=template % params, template=template, params=params, source=source)
        )


# --- the entry points -------------------------------------------------------------------------


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
    backend = gpu.backend
    notes = _Notes()
    host_bw = host_memory_bandwidth_gb_s or (
        gpu.bandwidth_gb_s if gpu.unified_memory else DEFAULT_HOST_MEMORY_BANDWIDTH_GB_S
    )
    if request.mode in TRAINING_MODES:
        server_bw = host_memory_bandwidth_gb_s or (
            DEFAULT_SERVER_MEMORY_BANDWIDTH_GB_S if gpu.memory_class == "hbm" else host_bw
        )
        return _training_speed(
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
    eff = efficiency or efficiency_for(runtime, backend, gpu.memory_class)
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
    slowdown = None
    if traffic.weight_host_bytes:
        on_gpu = traffic.model_copy(
            update={
                "weight_gpu_bytes": traffic.weight_gpu_bytes + traffic.weight_host_bytes,
                "weight_host_bytes": 0.0,
            }
        )
        all_gpu, _ = _decode_step(arch, on_gpu, gpu, runtime, eff, host_bw, batch=1, context=0)
        slowdown = single / all_gpu
        notes.add(
            gettext_noop(
                "%(host_gb)s GB of weights stay in system RAM and are read at %(host_bw)s GB/s "
                "(%(share)s%% achieved): generation is %(slowdown)s× slower than with every "
                "layer on the GPU."
            ),
            gettext_noop(
                "llama.cpp runs CPU-held layers on the CPU (-ngl); DDR5 peak: JEDEC JESD79-5"
            ),
            host_gb=round(traffic.weight_host_bytes / GB, 1),
            host_bw=host_bw,
            share=round(eff.host_bandwidth * 100),
            slowdown=round(slowdown, 1),
        )
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


def _training_speed(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    notes: _Notes,
    efficiency: Efficiency | None,
    train_tokens: float | None,
    price_per_gpu_hour: float | None,
    *,
    host_bandwidth_gb_s: float,
) -> SpeedResult:
    eff = efficiency or efficiency_for("training", gpu.backend, gpu.memory_class)
    tflops = peak_tflops(gpu, request.precision, "transformers")
    base = SpeedResult(
        runtime="training",
        backend=gpu.backend,
        decode_tokens_per_s=None,
        decode_tokens_per_s_full_context=None,
        decode_tokens_per_s_total=None,
        prefill_tokens_per_s=None,
        time_to_first_token_s=None,
        prompt_tokens=request.seq_len,
        decode_bound=None,
    )
    if not tflops:
        notes.add(
            gettext_noop(
                "The catalogue has no dense tensor throughput for this GPU, so training speed "
                "is not estimated."
            ),
            gettext_noop("presets/GPUS_SOURCES.md"),
        )
        return base.model_copy(update={"assumptions": notes.items})
    tp = request.tensor_parallel
    dp = request.num_gpus // tp
    tokens_per_group = request.batch_size * request.seq_len
    flops = tokens_per_group * training_flops_per_token(arch, request, result.params_active) / tp
    compute = flops / (tflops * TERA * eff.training_flops)
    # Element-wise work (norms, activations, dropout, softmax) is memory-bound: a fitted number of
    # passes over the activations every layer keeps per token, read at the GPU's bandwidth.
    stored = 34 * arch.hidden_size * arch.num_layers * tokens_per_group / tp
    compute += eff.training_traffic * stored / (gpu.bandwidth_gb_s * GB)
    # Data parallelism all-reduces the 2-byte gradients of the trainable weights once per step;
    # PyTorch DDP / FSDP overlap it with the backward pass (Li et al. 2020, arXiv:2006.15704
    # §3.2.3), so only what exceeds the backward's two thirds of the compute shows.
    gradients = 2 * result.params_trainable / tp
    comm = ring_allreduce_seconds(gradients, dp, gpu, eff)
    if request.zero_stage == 3:
        # ZeRO-3 / FSDP also all-gathers the parameters for forward and backward (arXiv:1910.02054 §7.2.2): 1.5× the traffic.
        comm *= 1.5
    comm += tensor_parallel_seconds(tokens_per_group, arch, tp, gpu, eff) * 3
    step = compute + max(0.0, comm - compute * 2 / 3)
    step += _offload_seconds(
        request, result, gpu, eff, notes, compute=compute, host_bandwidth_gb_s=host_bandwidth_gb_s
    )
    per_gpu = tokens_per_group / tp / step
    notes.add(
        gettext_noop(
            "Training reaches %(share)s%% of the GPU's dense %(precision)s throughput (hardware "
            "FLOPs, recomputation included), fitted to %(rows)s published runs."
        ),
        gettext_noop("validation/fit_speed.py; FLOPs: Chowdhery et al. 2022 Appendix B"),
        share=round(eff.training_flops * 100),
        precision=request.precision,
        rows=eff.fitted_rows,
    )
    time_to_train = None
    cost = None
    if train_tokens:
        time_to_train = train_tokens / (per_gpu * request.num_gpus)
        if price_per_gpu_hour is not None:
            cost = time_to_train / 3600 * request.num_gpus * price_per_gpu_hour
    return base.model_copy(
        update={
            "training_tokens_per_s_per_gpu": per_gpu,
            "step_time_s": step,
            "time_to_train_s": time_to_train,
            "cost": cost,
            "assumptions": notes.items,
        }
    )


def cpu_optimizer_bytes_per_param(optimizer: str) -> float:
    """Bytes the CPU's optimizer step streams per parameter: it reads the fp32 master weight, the
    fp32 gradient and each fp32 state, writes back the weight and the states, and writes the
    16-bit copy the GPU gets back (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840 §4.1: the
    fp32 update runs on the CPU). AdamW: 4 + 4 + 8 read, 4 + 8 + 2 written = 30 bytes."""
    states = {"adamw": 2, "paged_adamw": 2, "sgd_momentum": 1, "lion": 1}.get(optimizer, 0)
    return 4 + 4 + 4 * states + 4 + 4 * states + 2


def _offload_seconds(
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    efficiency: Efficiency,
    notes: _Notes,
    *,
    compute: float,
    host_bandwidth_gb_s: float,
) -> float:
    """What CPU offload adds to a training step (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840
    §4.1): each GPU sends its partition's 16-bit gradients to the host during the backward pass
    (hidden behind its compute when shorter), the CPU runs the optimizer step for every GPU of
    the machine at its memory bandwidth, and the updated 16-bit partition comes back before the
    next forward (both on the critical path: no delayed parameter update). With parameter
    offload the 16-bit parameters stay in host RAM: nothing comes back after the step, but each
    forward, backward and recomputation fetches the partition again, prefetched while the GPU
    computes (ZeRO-Infinity, Rajbhandari et al. 2021, arXiv:2104.07857 §6)."""
    switches = result.switches
    if switches is None or not (switches.optimizer_offload or switches.parameter_offload):
        return 0.0
    plan = plan_for(
        num_gpus=request.num_gpus,
        tensor_parallel=request.tensor_parallel,
        zero_stage=request.zero_stage,
        pipeline_parallel=request.pipeline_parallel,
        context_parallel=request.context_parallel,
    )
    # One GPU's share of the weights: tensor and pipeline ranks hold disjoint parts.
    model_split = plan.tp * plan.pp
    link_gb_s = gpu.host_link_gb_s
    link = link_gb_s * GB if link_gb_s else None
    extra = 0.0
    down = up = fetch = 0.0
    if switches.optimizer_offload:
        partition = result.params_trainable / model_split / plan.optimizer_shards
        machine = partition * min(request.num_gpus, GPUS_PER_NODE)
        per_param = cpu_optimizer_bytes_per_param(request.optimizer)
        cpu = machine * per_param / (host_bandwidth_gb_s * GB * efficiency.host_bandwidth)
        extra += cpu
        down = partition * 2
        up = 0.0 if switches.parameter_offload else partition * 2
        notes.add(
            gettext_noop(
                "Optimizer offload: the CPU updates the %(params)s parameters of the machine's "
                "GPUs, %(bytes)s bytes each through system RAM at %(share)s%% of %(host_bw)s "
                "GB/s: %(seconds)s s per step."
            ),
            gettext_noop("Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840) §4.1")
            + "; JEDEC JESD79-4, JESD79-5",
            params=int(machine),
            bytes=round(per_param),
            share=round(efficiency.host_bandwidth * 100),
            host_bw=host_bandwidth_gb_s,
            seconds=round(cpu, 2),
        )
    if switches.parameter_offload:
        passes = 3 if switches.activation_checkpointing == "full" else 2
        fetch = passes * result.params_total / model_split / plan.parameter_shards * 2
    if link is not None:
        hidden_down = max(0.0, down / link - compute * 2 / 3)
        hidden_fetch = max(0.0, fetch / link - compute)
        pcie = hidden_down + up / link + hidden_fetch
        extra += pcie
        notes.add(
            gettext_noop(
                "Offload traffic per GPU and step over its %(link)s GB/s host link: %(down)s GB "
                "of gradients down and %(fetch)s GB of parameters fetched during forward and "
                "backward (hidden behind the GPU's compute where shorter), %(up)s GB of "
                "updated parameters up after the step: %(seconds)s s per step."
            ),
            gettext_noop("Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840) §4.1")
            + "; Rajbhandari et al. 2021, ZeRO-Infinity (arXiv:2104.07857) §6; "
            + gettext_noop("PCIe 4.0 x16 where the catalogue has no figure (PCI-SIG)"),
            link=link_gb_s or 0.0,
            down=round(down / GB, 2),
            fetch=round(fetch / GB, 2),
            up=round(up / GB, 2),
            seconds=round(pcie, 2),
        )
    return extra


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


# --- chart series ------------------------------------------------------------------------------


class SeriesPoint(_Frozen):
    x: float
    y: float


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

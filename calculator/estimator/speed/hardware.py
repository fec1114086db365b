"""What the speed estimate knows about GPUs: their datasheet figures (from the catalogue), the
share of them each runtime reaches (fitted to published measurements), and the dense tensor
throughput that applies to a precision."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
# llama.cpp's CPU side, fitted by `validation/llama_cpp_offload.py` on the training split of
# the published expert-offload and CPU-only runs (validation/published/
# llama_cpp_moe_offload_runs.json, llama_cpp_offload_speed_runs.json); rerun it and copy its
# output here when rows change. Whatever the GPU, the CPU and its RAM do this part.
LLAMA_CPP_HOST_BANDWIDTH = 0.79
LLAMA_CPP_HOST_MOE_LAYER_S = 0.0006
LLAMA_CPP_HOST_FITTED_RUNS = 12


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
    host_moe_layer_s: float = Field(
        default=0.0,
        ge=0,
        description="llama.cpp: fixed cost per decode step of each MoE layer whose routed "
        "experts run on the CPU (the hand-off between backends and the CPU's expert dispatch).",
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
    return _efficiency_for(runtime, backend, memory_class)


# Immutable factors from constants: one copy per (runtime, backend, class), not one per estimate.
@cache
def _efficiency_for(runtime: str, backend: str, memory_class: str) -> Efficiency:
    group = "serving" if runtime in {"vllm", "transformers"} else runtime
    keys = (f"{backend}/{memory_class}", f"cuda/{memory_class}", "cuda/gddr", "cuda/hbm")
    chosen = next(FITTED[(group, key)] for key in keys if (group, key) in FITTED)
    if runtime == "llama_cpp":
        chosen = chosen.model_copy(
            update={
                "host_bandwidth": LLAMA_CPP_HOST_BANDWIDTH,
                "host_moe_layer_s": LLAMA_CPP_HOST_MOE_LAYER_S,
            }
        )
    if runtime == "transformers":
        chosen = chosen.model_copy(update={"step_overhead_s": TRANSFORMERS_STEP_OVERHEAD_S})
    return chosen


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


def pcie_fallback_gb_s() -> float:
    """PCIe 4.0 x16: 16 GT/s × 16 lanes × 128/130 encoding ÷ 8 = 31.5 GB/s per direction
    (PCI-SIG PCIe 4.0 base specification), used where the catalogue records no interconnect."""
    return 31.5

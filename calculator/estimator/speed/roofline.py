"""The pieces of a step's time: FLOPs per token, the share of the weights a step reads, the
roofline of one step, and the collectives between GPUs."""

from __future__ import annotations

from typing import Literal

from calculator.estimator.architecture import Architecture
from calculator.estimator.speed.hardware import (
    GB,
    TERA,
    Efficiency,
    GpuPerformance,
    pcie_fallback_gb_s,
)


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


def ring_allreduce_seconds(
    payload_bytes: float, ranks: int, gpu: GpuPerformance, efficiency: Efficiency
) -> float:
    """A ring all-reduce sends 2·(n-1)/n of the payload over each link (Patarasuk & Yuan 2009,
    J. Parallel Distrib. Comput. 69(2)); plus a fixed latency per call."""
    if ranks <= 1:
        return 0.0
    link = (gpu.interconnect_gb_s or pcie_fallback_gb_s()) * GB
    return 2 * (ranks - 1) / ranks * payload_bytes / link + efficiency.allreduce_latency_s


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

"""The speed roofline, checked against hand calculations.

Every expected number is worked out below from:
- GPU datasheet figures (the same ones presets/gpus.json cites): RTX 4090 1008 GB/s and 165.2 dense
  BF16 TFLOPS (FP32 accumulate, NVIDIA Ada whitepaper as quoted in presets/GPUS_SOURCES.md);
  H100 SXM 3350 GB/s and 989.4 dense BF16 TFLOPS (NVIDIA H100 datasheet); A100 SXM 312 dense BF16
  TFLOPS (NVIDIA A100 datasheet); NVLink 4 450 GB/s per direction (ml-engineering network table).
- Llama-3-8B's config.json (presets/models/llama.json: 32 layers, 32 heads of 128, 8 KV heads)
  and its parameter count 8,030,261,248 (/work/shared/research/published-measurements.md §A,
  also llama.cpp's "model params = 8.03 B").
- Mixtral-8x7B's published 46.7B total / 12.9B active (Mistral AI; counts in the same §A table).
Efficiency factors are passed explicitly (round numbers) so the arithmetic is the roofline's alone.
"""

import pytest

from calculator.estimator import estimate
from calculator.estimator.speed import (
    Efficiency,
    GpuPerformance,
    efficiency_for,
    estimate_speed,
    expert_read_fraction,
    forward_flops_per_token,
    peak_tflops,
    ring_allreduce_seconds,
    speed_series,
    step_seconds,
    training_flops_per_token,
    weight_read_fraction,
)
from validation.fit_speed import architecture, request_for

LLAMA3_8B_PARAMS = 8_030_261_248
HALF = Efficiency(decode_bandwidth=0.5, prefill_compute=0.5, step_overhead_s=0.001)
RTX_4090 = GpuPerformance(bandwidth_gb_s=1008, bf16_tflops=165.2, fp16_tflops=165.2)
H100_SXM = GpuPerformance(
    bandwidth_gb_s=3350,
    bf16_tflops=989.4,
    fp16_tflops=989.4,
    fp8_tflops=1979,
    int8_tops=1979,
    interconnect="nvlink",
    interconnect_gb_s=450,
    memory_type="HBM3",
)


def llama3_8b(**fields):
    request = request_for("llama-3-8b", **fields)
    return architecture("llama-3-8b"), request, estimate(request)


def test_decode_one_sequence_is_weights_over_bandwidth():
    arch, request, result = llama3_8b(seq_len=8192)
    speed = estimate_speed(arch, request, result, RTX_4090, efficiency=HALF)
    # BF16 weights: 8,030,261,248 × 2 = 16,060,522,496 bytes, read at 1008 GB/s × 0.5 = 504 GB/s:
    # 16.060522496e9 / 504e9 = 0.0318661 s, + 1 ms per step = 0.0328661 s -> 30.426 tokens/s.
    # Compute for comparison: 2 × 8.03e9 FLOPs / (165.2e12 × 0.5) = 0.19 ms, so memory-bound.
    assert speed.decode_tokens_per_s == pytest.approx(1 / 0.0328661, rel=1e-4)
    assert speed.decode_bound == "memory"


def test_decode_at_full_context_also_reads_the_kv_cache():
    arch, request, result = llama3_8b(seq_len=8192)
    speed = estimate_speed(arch, request, result, RTX_4090, efficiency=HALF)
    # KV per token: K and V × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 bytes;
    # 8192 tokens -> 1,073,741,824 bytes. (16,060,522,496 + 1,073,741,824) / 504e9 = 0.0339966 s,
    # + 1 ms = 0.0349966 s -> 28.574 tokens/s.
    assert speed.decode_tokens_per_s_full_context == pytest.approx(1 / 0.0349966, rel=1e-4)


def vllm_llama3_8b(seq_len: int, utilization: float = 0.9):
    arch = architecture("llama-3-8b")
    settings = {
        "gpu_memory_bytes": 80 * 2**30,
        "max_model_len": seq_len,
        "gpu_memory_utilization": utilization,
    }
    request = request_for("llama-3-8b", seq_len=seq_len, runtime="vllm", vllm=settings)
    result = estimate(request)
    speed = estimate_speed(arch, request, result, H100_SXM, runtime="vllm", vllm=result.vllm)
    return result, speed


def test_vllm_decode_reads_the_sequences_kv_cache_not_its_whole_pool():
    # PagedAttention reads each cached block of the sequence (Kwon et al. 2023 §4.1): 131,072 KV
    # bytes per token (see above) times the context, not the pool vLLM reserved at start-up.
    short_result, short = vllm_llama3_8b(1024)
    _, long = vllm_llama3_8b(32768)
    eff = efficiency_for("vllm", "cuda", "hbm")
    # Hand calculation: (32,768 - 1,024) × 131,072 bytes more per step, at 3350 GB/s × the
    # fitted decode share; the weights and the fixed step cost cancel out.
    extra_s = (32768 - 1024) * 131_072 / (3350e9 * eff.decode_bandwidth)
    assert (
        1 / long.decode_tokens_per_s_full_context - 1 / short.decode_tokens_per_s_full_context
        == (pytest.approx(extra_s, rel=1e-3))
    )
    # Empty context: the weights alone, whatever the context chosen.
    weights_s = short_result.vllm.weights / (3350e9 * eff.decode_bandwidth) + eff.step_overhead_s
    assert short.decode_tokens_per_s == pytest.approx(1 / weights_s, rel=1e-3)
    # A bigger pool (more memory for vLLM) holds more tokens but reads no more per step.
    _, roomy = vllm_llama3_8b(32768, utilization=0.95)
    assert roomy.decode_tokens_per_s_full_context == pytest.approx(
        long.decode_tokens_per_s_full_context, rel=1e-6
    )


def test_batched_decode_turns_compute_bound():
    arch, request, result = llama3_8b(seq_len=256, batch_size=512)
    fast = Efficiency(decode_bandwidth=1.0, prefill_compute=1.0, step_overhead_s=0.0)
    speed = estimate_speed(arch, request, result, RTX_4090, efficiency=fast)
    # 512 sequences at a mean context of 128 tokens.
    # Bytes: 16,060,522,496 + 512 × 128 × 131,072 = 16,060,522,496 + 8,589,934,592
    #        = 24,650,457,088 -> / 1008e9 = 0.0244548 s.
    # FLOPs: 512 × (2 × 8,030,261,248 + 4 × 32 × 32 × 128 × 128) = 512 × 16,127,631,360
    #        = 8.2573472563e12 -> / 165.2e12 = 0.0499839 s: compute-bound.
    assert speed.decode_bound == "compute"
    assert speed.decode_tokens_per_s_total == pytest.approx(512 / 0.0499839, rel=1e-4)


def test_prefill_and_time_to_first_token():
    arch, request, result = llama3_8b(seq_len=4096)
    speed = estimate_speed(arch, request, result, H100_SXM, efficiency=HALF)
    # 4096 prompt tokens, causal attention sees 2048 on average:
    # per token 2 × 8,030,261,248 + 4 × 32 × 32 × 128 × 2048 = 16,060,522,496 + 1,073,741,824
    #         = 17,134,264,320 FLOPs; × 4096 = 7.01819e13 FLOPs.
    # / (989.4e12 × 0.5) = 0.141868 s (weights: 16.06e9 / 1675e9 = 9.6 ms, hidden), + 1 ms.
    assert speed.time_to_first_token_s == pytest.approx(0.142868, rel=1e-4)
    assert speed.prefill_tokens_per_s == pytest.approx(4096 / 0.142868, rel=1e-4)
    assert speed.prompt_tokens == 4096


def test_prompt_tokens_override_the_context_length():
    arch, request, result = llama3_8b(seq_len=4096)
    speed = estimate_speed(arch, request, result, H100_SXM, prompt_tokens=512, efficiency=HALF)
    # 512 × (16,060,522,496 + 4 × 32 × 32 × 128 × 256) = 512 × 16,194,740,224 = 8.29171e12 FLOPs
    # -> / 494.7e12 = 0.0167611 s; weights 16,060,522,496 / 1675e9 = 0.0095884 s, so compute;
    # + 1 ms = 0.0177611 s.
    assert speed.time_to_first_token_s == pytest.approx(0.0177611, rel=1e-4)


def test_no_tensor_throughput_means_no_prefill_estimate():
    arch, request, result = llama3_8b()
    mac = GpuPerformance(bandwidth_gb_s=800, unified_memory=True, vendor="apple")
    speed = estimate_speed(arch, request, result, mac)
    assert speed.backend == "metal"
    assert speed.prefill_tokens_per_s is None
    assert speed.decode_tokens_per_s is not None
    assert any("no dense tensor throughput" in note.text for note in speed.assumptions)


def test_host_layers_are_read_at_host_bandwidth():
    # 4 GB on a 1000 GB/s GPU at 50%: 8 ms; 2 GB in 100 GB/s RAM at 50%: 40 ms; total 48 ms.
    eff = Efficiency(
        decode_bandwidth=0.5, prefill_compute=0.5, step_overhead_s=0.0, host_bandwidth=0.5
    )
    gpu = GpuPerformance(bandwidth_gb_s=1000, bf16_tflops=100)
    seconds, bound = step_seconds(
        gpu_bytes=4e9,
        host_bytes=2e9,
        flops=1e9,
        gpu=gpu,
        tflops=100,
        efficiency=eff,
        host_bandwidth_gb_s=100,
        compute_efficiency=0.5,
    )
    assert seconds == pytest.approx(0.048)
    assert bound == "memory"


def test_llama_cpp_partial_offload_reports_the_slowdown():
    from calculator.estimator.runtimes import LlamaCppOptions, estimate_llama_cpp

    arch, request, result = llama3_8b(seq_len=4096)
    full = estimate_llama_cpp(arch, LlamaCppOptions(gguf_type="Q4_K_M", n_ctx=4096))
    half = estimate_llama_cpp(
        arch, LlamaCppOptions(gguf_type="Q4_K_M", n_ctx=4096, n_gpu_layers=16)
    )
    on_gpu = estimate_speed(
        arch, request, result, RTX_4090, runtime="llama_cpp", llama_cpp=full, efficiency=HALF
    )
    split = estimate_speed(
        arch, request, result, RTX_4090, runtime="llama_cpp", llama_cpp=half, efficiency=HALF
    )
    assert on_gpu.host_slowdown is None
    # Half the layers in 89.6 GB/s DDR5 (× 0.6 achieved) against 1008 GB/s (× 0.5): the host
    # half alone takes ~9× longer than the GPU half, so the split runs several times slower.
    assert split.host_slowdown is not None
    assert split.host_slowdown > 4
    assert split.decode_tokens_per_s is not None
    assert on_gpu.decode_tokens_per_s is not None
    assert split.decode_tokens_per_s < on_gpu.decode_tokens_per_s / 4
    assert any("system RAM" in note.text for note in split.assumptions)


def test_ring_allreduce_over_nvlink():
    # 1 GB over 8 ranks: 2 × 7/8 × 1e9 / 450e9 = 3.8889 ms, + 20 µs latency.
    seconds = ring_allreduce_seconds(1e9, 8, H100_SXM, HALF)
    assert seconds == pytest.approx(0.0038889 + 20e-6, rel=1e-4)
    assert ring_allreduce_seconds(1e9, 1, H100_SXM, HALF) == 0


def test_pcie_without_a_recorded_figure_uses_pcie4():
    # PCIe 4.0 x16: 16 GT/s × 16 lanes × 128/130 / 8 = 31.5 GB/s; 2 × 1/2 × 1e9 / 31.5e9 = 31.7 ms.
    seconds = ring_allreduce_seconds(1e9, 2, RTX_4090, HALF)
    assert seconds == pytest.approx(1e9 / 31.5e9 + 20e-6, rel=1e-4)


def test_training_tokens_per_second_time_and_cost():
    arch, request, result = llama3_8b(mode="pretrain", seq_len=2048, batch_size=1)
    a100 = GpuPerformance(bandwidth_gb_s=2039, bf16_tflops=312, memory_type="HBM2e")
    eff = Efficiency(
        decode_bandwidth=0.5, prefill_compute=0.5, step_overhead_s=0.0, training_flops=0.5
    )
    speed = estimate_speed(
        arch, request, result, a100, efficiency=eff, train_tokens=1e9, price_per_gpu_hour=2.0
    )
    # 6 × 8,030,261,248 + 12 × 32 × 32 × 128 × 2048 = 48,181,567,488 + 3,221,225,472
    # = 51,402,792,960 FLOPs per token; 312e12 × 0.5 / 51,402,792,960 = 3034.85 tokens/s.
    assert speed.training_tokens_per_s_per_gpu == pytest.approx(3034.85, rel=1e-4)
    assert speed.step_time_s == pytest.approx(2048 / 3034.85, rel=1e-4)
    # 1e9 tokens / 3034.85 = 329,505 s = 91.53 GPU-hours -> $183.06 at $2 per GPU-hour.
    assert speed.time_to_train_s == pytest.approx(1e9 / 3034.85, rel=1e-4)
    assert speed.cost == pytest.approx(1e9 / 3034.85 / 3600 * 2, rel=1e-4)


def test_optimizer_offload_adds_the_cpu_step_and_the_pcie_traffic():
    # ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840 §4.1) on one machine of 8 GPUs, ZeRO-3:
    # each GPU's partition is 8,030,261,248 / 8 = 1,003,782,656 parameters.
    # CPU step: AdamW streams 4 + 4 + 8 bytes read and 4 + 8 + 2 written = 30 bytes per
    # parameter for all 8,030,261,248 of the machine: 240.9 GB at 200 GB/s × 0.5 = 2.4091 s.
    # Up: the updated 16-bit partition, 2 × 1,003,782,656 B over PCIe 4.0 x16 (31.5 GB/s; the
    # H100 here records NVLink only) = 0.063732 s. The gradients going down (the same 2 GB)
    # hide behind the backward pass, two thirds of a step of several seconds.
    fields = {
        "mode": "full_finetune",
        "seq_len": 4096,
        "batch_size": 4,
        "num_gpus": 8,
        "zero_stage": 3,
        "training_stack": "deepspeed",
    }
    arch, request, result = llama3_8b(**fields)
    _, offloaded_request, offloaded = llama3_8b(**fields, optimizer_offload=True)
    eff = Efficiency(
        decode_bandwidth=0.5,
        prefill_compute=0.5,
        step_overhead_s=0.0,
        training_flops=0.5,
        host_bandwidth=0.5,
    )
    gpus = H100_SXM.model_copy(update={"count": 8})

    def step(req, res):
        return estimate_speed(
            arch, req, res, gpus, efficiency=eff, host_memory_bandwidth_gb_s=200
        ).step_time_s

    cpu_s = 30 * LLAMA3_8B_PARAMS / (200e9 * 0.5)
    up_s = 2 * LLAMA3_8B_PARAMS / 8 / 31.5e9
    assert step(offloaded_request, offloaded) - step(request, result) == pytest.approx(
        cpu_s + up_s, rel=1e-3
    )
    # Parameter offload keeps the 16-bit partition in RAM: nothing goes up after the step, and
    # its fetches (3 passes with checkpointing × 2 GB = 0.19 s) hide behind the compute.
    _, both_request, both = llama3_8b(
        **fields, optimizer_offload=True, parameter_offload=True, gradient_checkpointing=True
    )
    _, ckpt_request, ckpt = llama3_8b(**fields, gradient_checkpointing=True)
    assert step(both_request, both) - step(ckpt_request, ckpt) == pytest.approx(cpu_s, rel=1e-3)


def test_training_flops_add_a_forward_when_checkpointing():
    arch = architecture("llama-3-8b")
    plain = request_for("llama-3-8b", mode="pretrain", seq_len=2048)
    checkpointed = request_for(
        "llama-3-8b", mode="pretrain", seq_len=2048, gradient_checkpointing=True
    )
    lora = request_for("llama-3-8b", mode="lora", seq_len=2048)
    forward = 2 * LLAMA3_8B_PARAMS + 4 * 32 * 32 * 128 * 2048
    assert training_flops_per_token(arch, plain, LLAMA3_8B_PARAMS) == 3 * forward
    assert training_flops_per_token(arch, checkpointed, LLAMA3_8B_PARAMS) == 4 * forward
    # LoRA: forward + activation gradients, no weight gradients for the frozen base.
    assert training_flops_per_token(arch, lora, LLAMA3_8B_PARAMS) == 2 * forward


def test_forward_flops_follow_palm_appendix_b():
    arch = architecture("llama-3-8b")
    # 2N + 4·L·H·Q·T with T = 1000: 16,060,522,496 + 4 × 32 × 32 × 128 × 1000 = 16,584,810,496.
    assert forward_flops_per_token(arch, LLAMA3_8B_PARAMS, 1000) == 16_584_810_496


def test_moe_decode_reads_only_the_experts_it_routes_to():
    # Mixtral: 8 experts, 2 per token.
    arch = architecture("mixtral-8x7b")
    assert expert_read_fraction(arch, 1) == pytest.approx(0.25)
    assert expert_read_fraction(arch, 2) == pytest.approx(1 - 0.75**2)
    total, active = 46_702_792_704, 12_879_925_248
    # Batch 1 reads exactly the active share: experts = (total - active) / (1 - 2/8).
    assert weight_read_fraction(arch, total, active, 1) == pytest.approx(active / total)
    # A large batch touches every expert.
    assert weight_read_fraction(arch, total, active, 4096) == pytest.approx(1.0)


def test_peak_throughput_follows_precision_and_runtime():
    assert peak_tflops(H100_SXM, "fp8", "vllm") == 1979
    assert peak_tflops(H100_SXM, "int8", "vllm") == 1979
    # transformers dequantizes 8-bit weights to 16-bit matmuls.
    assert peak_tflops(H100_SXM, "int8", "transformers") == 989.4
    # fp32 runs on TF32 tensor cores at half the BF16 rate (A100 datasheet: 156 vs 312).
    assert peak_tflops(H100_SXM, "fp32", "transformers") == pytest.approx(494.7)


def test_fitted_factors_are_chosen_by_backend_and_memory_class():
    hbm = efficiency_for("llama_cpp", "cuda", "hbm")
    gddr = efficiency_for("llama_cpp", "cuda", "gddr")
    assert hbm != gddr
    # A backend without published rows falls back to CUDA's factors for the same class.
    assert efficiency_for("llama_cpp", "sycl", "gddr") == gddr
    assert efficiency_for("transformers", "cuda", "hbm").step_overhead_s > 0


def test_series_for_the_charts():
    arch, request, result = llama3_8b(seq_len=4096)
    throughput = speed_series(arch, request, result, RTX_4090, batch_sizes=(1, 8), efficiency=HALF)
    # Batch 1 at a mean context of 2048: (16,060,522,496 + 2048 × 131,072) / 504e9 + 1 ms
    # = 16,328,957,952 / 504e9 + 0.001 = 0.0333987 s -> 29.941 tokens/s.
    assert throughput[0].x == 1
    assert throughput[0].y == pytest.approx(1 / 0.0333987, rel=1e-4)
    assert throughput[1].y > throughput[0].y


def test_experts_in_ram_decode_reads_only_the_routed_ones_from_ram():
    from calculator.estimator.runtimes import LlamaCppOptions, estimate_llama_cpp

    # gpt-oss-120b (presets/models/gpt_oss.json, its config.json: 36 layers, 128 experts of
    # 2880 x 2880, 4 per token), MXFP4 experts (17 bytes per 32 values) all in RAM.
    slug = "gpt-oss-120b"
    arch, request = architecture(slug), request_for(slug, seq_len=4096, runtime="llama_cpp")
    result = estimate(request)
    offload = estimate_llama_cpp(arch, LlamaCppOptions(n_ctx=4096, n_parallel=1, cpu_moe=True))
    experts_in_ram = 36 * 3 * 2880 * 2880 * 128 // 32 * 17
    assert offload.expert_bytes.host == experts_in_ram
    no_gpu = GpuPerformance(bandwidth_gb_s=1e9, bf16_tflops=1e9, fp16_tflops=1e9)
    speed = estimate_speed(
        arch,
        request,
        result,
        no_gpu,
        runtime="llama_cpp",
        llama_cpp=offload,
        efficiency=Efficiency(
            decode_bandwidth=1.0, prefill_compute=1.0, step_overhead_s=0.0, host_bandwidth=1.0
        ),
        host_memory_bandwidth_gb_s=100,
    )
    # A decode step of one sequence reads 4 of the 128 experts of every layer from RAM; with a
    # GPU that takes no time, the step is those bytes over 100 GB/s: 1.904 GB, 19.0 ms.
    assert speed.decode_tokens_per_s is not None
    assert expert_read_fraction(arch, 1) == pytest.approx(4 / 128)
    read = experts_in_ram * 4 / 128
    assert 1 / speed.decode_tokens_per_s == pytest.approx(read / 100e9, rel=1e-3)

"""Training speed: hardware FLOPs per trained token at a fitted utilisation, the collectives of
data and tensor parallelism, and what CPU offload adds to a step."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import plan_for
from calculator.estimator.schemas import EstimateRequest, EstimateResult
from calculator.estimator.speed.hardware import (
    GB,
    GPUS_PER_NODE,
    TERA,
    Efficiency,
    GpuPerformance,
    efficiency_for,
    peak_tflops,
)
from calculator.estimator.speed.result import SpeedResult
from calculator.estimator.speed.roofline import (
    forward_flops_per_token,
    ring_allreduce_seconds,
    tensor_parallel_seconds,
)


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


def _no_throughput(base: SpeedResult, notes: Notes) -> SpeedResult:
    notes.add(
        gettext_noop(
            "The catalogue has no dense tensor throughput for this GPU, so training speed "
            "is not estimated."
        ),
        gettext_noop("presets/GPUS_SOURCES.md"),
    )
    return base.model_copy(update={"assumptions": notes.items})


def _compute_seconds(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    eff: Efficiency,
    tflops: float,
) -> float:
    """One step's FLOPs at the fitted utilisation (``training_flops_per_token``), plus its
    memory-bound element-wise work."""
    tp = request.tensor_parallel
    tokens_per_group = request.batch_size * request.seq_len
    flops = tokens_per_group * training_flops_per_token(arch, request, result.params_active) / tp
    compute = flops / (tflops * TERA * eff.training_flops)
    # Element-wise work (norms, activations, dropout, softmax) is memory-bound: a fitted number of
    # passes over the activations every layer keeps per token, read at the GPU's bandwidth.
    stored = 34 * arch.hidden_size * arch.num_layers * tokens_per_group / tp
    return compute + eff.training_traffic * stored / (gpu.bandwidth_gb_s * GB)


def _communication_seconds(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    eff: Efficiency,
) -> float:
    """The step's collectives: the data-parallel gradient all-reduce (with ZeRO-3's parameter
    gathers) and tensor parallelism's activation all-reduces."""
    tp = request.tensor_parallel
    dp = request.num_gpus // tp
    # Data parallelism all-reduces the 2-byte gradients of the trainable weights once per step;
    # PyTorch DDP / FSDP overlap it with the backward pass (Li et al. 2020, arXiv:2006.15704
    # §3.2.3), so only what exceeds the backward's two thirds of the compute shows.
    gradients = 2 * result.params_trainable / tp
    comm = ring_allreduce_seconds(gradients, dp, gpu, eff)
    if request.zero_stage == 3:
        # ZeRO-3 / FSDP also all-gathers the parameters for forward and backward (arXiv:1910.02054 §7.2.2): 1.5× the traffic.
        comm *= 1.5
    tokens_per_group = request.batch_size * request.seq_len
    return comm + tensor_parallel_seconds(tokens_per_group, arch, tp, gpu, eff) * 3


def training_speed(
    arch: Architecture,
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    notes: Notes,
    efficiency: Efficiency | None,
    train_tokens: float | None,
    price_per_gpu_hour: float | None,
    *,
    host_bandwidth_gb_s: float,
) -> SpeedResult:
    """Tokens per second per GPU, step time, time to train and its cost."""
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
        return _no_throughput(base, notes)
    compute = _compute_seconds(arch, request, result, gpu, eff, tflops)
    comm = _communication_seconds(arch, request, result, gpu, eff)
    step = compute + max(0.0, comm - compute * 2 / 3)
    step += _offload_seconds(
        request, result, gpu, eff, notes, compute=compute, host_bandwidth_gb_s=host_bandwidth_gb_s
    )
    tokens_per_group = request.batch_size * request.seq_len
    per_gpu = tokens_per_group / request.tensor_parallel / step
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


def _cpu_step_seconds(
    request: EstimateRequest,
    partition: float,
    efficiency: Efficiency,
    notes: Notes,
    *,
    host_bandwidth_gb_s: float,
) -> float:
    """The CPU runs the optimizer step for every GPU of the machine at its memory bandwidth
    (``cpu_optimizer_bytes_per_param`` per parameter)."""
    machine = partition * min(request.num_gpus, GPUS_PER_NODE)
    per_param = cpu_optimizer_bytes_per_param(request.optimizer)
    cpu = machine * per_param / (host_bandwidth_gb_s * GB * efficiency.host_bandwidth)
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
    return cpu


def _host_link_seconds(
    gpu: GpuPerformance, down: float, up: float, fetch: float, compute: float, notes: Notes
) -> float:
    """Gradients going down hide behind backward's two thirds of the compute and parameter
    fetches behind all of it, where shorter; the updated parameters coming up do not."""
    link_gb_s = gpu.host_link_gb_s
    if not link_gb_s:
        return 0.0
    link = link_gb_s * GB
    hidden_down = max(0.0, down / link - compute * 2 / 3)
    hidden_fetch = max(0.0, fetch / link - compute)
    pcie = hidden_down + up / link + hidden_fetch
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
    return pcie


def _offload_seconds(
    request: EstimateRequest,
    result: EstimateResult,
    gpu: GpuPerformance,
    efficiency: Efficiency,
    notes: Notes,
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
    extra = 0.0
    down = up = fetch = 0.0
    if switches.optimizer_offload:
        partition = result.params_trainable / model_split / plan.optimizer_shards
        extra += _cpu_step_seconds(
            request, partition, efficiency, notes, host_bandwidth_gb_s=host_bandwidth_gb_s
        )
        down = partition * 2
        up = 0.0 if switches.parameter_offload else partition * 2
    if switches.parameter_offload:
        passes = 3 if switches.activation_checkpointing == "full" else 2
        fetch = passes * result.params_total / model_split / plan.parameter_shards * 2
    return extra + _host_link_seconds(gpu, down, up, fetch, compute, notes)

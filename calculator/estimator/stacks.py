"""Training stacks: the memory-relevant switches each framework turns on by default.

A stack is a named bundle of defaults. Every switch is also a request field; a value the request
gives wins over the stack's (``None`` in the request means "the stack's default"). The sources are
the frameworks' own configuration defaults, read at the commits named in each ``source``.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.messages import gettext_noop
from calculator.estimator.schemas import EstimateRequest, StackSwitches


@dataclass(frozen=True)
class Stack:
    label: str
    optimizer_impl: str
    loss: str
    activation_checkpointing: str
    activation_offloading: bool
    optimizer_offload: bool
    parameter_offload: bool
    sequence_parallel: bool
    adapters_in_compute_dtype: bool
    """LoRA adapters (and so their optimizer states) in the model's dtype, not fp32."""
    pinned_host_memory: bool
    """Whether the stack page-locks the host copies it offloads to."""
    source: str
    qlora_fp32_non_quantized: bool = True
    """QLoRA: embeddings, LM head and norms upcast to fp32 (PEFT's
    ``prepare_model_for_kbit_training``); torchtune and Unsloth keep them in bf16."""
    fused_layer_kernels: bool = False
    """Unsloth's Triton layer kernels (see ``activations.Setting.fused_layer_kernels``)."""
    resident_gradients: bool = False
    """Gradients live in one buffer allocated when the model is wrapped, so they occupy memory in
    every phase, forward included (Megatron-core ``DistributedDataParallel``'s
    ``ParamAndGradBuffer``; fp32 with bf16, as ``--accumulate-allreduce-grads-in-fp32`` is
    implied by ``--bf16`` in Megatron-LM's ``arguments.py``)."""
    own_model_code: bool = False
    """The stack runs its own model implementation, whose tanh GELU is one fused op
    (litgpt/model.py ``F.gelu(x, approximate=config.gelu_approximate)``; torchtune's modules)."""
    fp32_optimizer_partitions: bool = False
    """With 16-bit weights the optimizer keeps fp32 master weights and fp32 states, partitioned
    like its states, and converts the gradients to fp32 for the step (DeepSpeed's ZeRO
    optimizers with ``bf16``/``fp16`` enabled; DeepSpeed docs/code-docs/source/memory.rst: 16
    bytes per parameter of fp32 params, grads, momentum and variance)."""
    offloads: tuple[str, ...] = ()
    """The offload switches the framework has a setting for (the advice suggests only these)."""


STACKS: dict[str, Stack] = {
    "hf_trainer": Stack(
        label=gettext_noop("Hugging Face Trainer (also TRL, Axolotl, LLaMA-Factory)"),
        # TrainingArguments.optim defaults to "adamw_torch_fused" with torch >= 2.8;
        # gradient_checkpointing defaults to False; the loss is the model's ForCausalLMLoss.
        optimizer_impl="fused",
        loss="full",
        activation_checkpointing="none",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=False,
        pinned_host_memory=False,
        source=gettext_noop(
            "transformers 5.24.0 training_args.py (default_optim = adamw_torch_fused for torch "
            ">= 2.8; gradient_checkpointing=False); PEFT autocast_adapter_dtype=True (fp32 adapters)"
        ),
        # TRL's SFTConfig(activation_offloading=True) (trl/models/activation_offloading.py),
        # Axolotl's activation_offloading: true.
        offloads=("activation_offloading",),
    ),
    "hf_trainer_liger": Stack(
        label=gettext_noop("Hugging Face Trainer with Liger kernels"),
        # use_liger_kernel=True patches the model with fused_linear_cross_entropy=True: the LM
        # head and the loss run chunk by chunk and the full logits never exist.
        optimizer_impl="fused",
        loss="fused_linear",
        activation_checkpointing="none",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=False,
        pinned_host_memory=False,
        source=gettext_noop(
            "Liger-Kernel README and src/liger_kernel/transformers/monkey_patch.py "
            "(apply_liger_kernel_to_llama: fused_linear_cross_entropy=True); transformers "
            "TrainingArguments.use_liger_kernel"
        ),
        offloads=("activation_offloading",),
    ),
    "unsloth": Stack(
        label=gettext_noop("Unsloth"),
        # get_peft_model(use_gradient_checkpointing="unsloth"): checkpointed hidden states are
        # copied to CPU RAM in forward and brought back one layer at a time in backward; the
        # loss never materialises fp32 logits.
        optimizer_impl="fused",
        loss="fused_linear",
        activation_checkpointing="full",
        activation_offloading=True,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=True,
        pinned_host_memory=False,
        source=gettext_noop(
            "Unsloth README and unsloth/models/_utils.py "
            "(Unsloth_Offloaded_Gradient_Checkpointer: hidden_states.to('cpu', non_blocking=True)); "
            "unsloth/kernels/cross_entropy_loss.py, rms_layernorm.py, fast_lora.py"
        ),
        qlora_fp32_non_quantized=False,
        fused_layer_kernels=True,
        offloads=("activation_offloading",),
    ),
    "torchtune": Stack(
        label=gettext_noop("torchtune"),
        # Recipe configs (e.g. llama3_1/8B_lora_single_device.yaml): dtype bf16 (adapters and
        # optimizer states too), torch.optim.AdamW(fused=True), CEWithChunkedOutputLoss,
        # enable_activation_checkpointing=True, enable_activation_offloading=False.
        optimizer_impl="fused",
        loss="chunked",
        activation_checkpointing="full",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=True,
        pinned_host_memory=True,
        source=gettext_noop(
            "pytorch/torchtune recipes/configs/llama3_1/8B_lora_single_device.yaml; "
            "torchtune/modules/loss/ce_chunked_output_loss.py (num_output_chunks=8); "
            "torchtune/training/_activation_offloading.py (pinned host buffers)"
        ),
        own_model_code=True,
        qlora_fp32_non_quantized=False,
        # enable_activation_offloading; torchao's CPUOffloadOptimizer as the recipe's optimizer
        # (torchtune docs, "Memory optimization overview").
        offloads=("activation_offloading", "optimizer_offload"),
    ),
    "litgpt": Stack(
        label=gettext_noop("LitGPT"),
        # finetune/lora.py: model(..., lm_head_chunk_size=128) and chunked_cross_entropy;
        # --precision bf16-true (adapters in bf16); torch.optim.AdamW with PyTorch's CUDA default
        # (foreach); no activation checkpointing.
        optimizer_impl="foreach",
        loss="chunked",
        activation_checkpointing="none",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=True,
        pinned_host_memory=False,
        source=gettext_noop(
            "Lightning-AI/litgpt litgpt/finetune/lora.py (lm_head_chunk_size=128, "
            "chunked_cross_entropy) and litgpt/utils.py; tutorials/resource-tables.md (bf16-true)"
        ),
        own_model_code=True,
        qlora_fp32_non_quantized=False,
    ),
    "deepspeed": Stack(
        label=gettext_noop("DeepSpeed ZeRO"),
        # DeepSpeed's FusedAdam (DeepSpeedCPUAdam when the optimizer is offloaded). Offload is
        # opt-in in the config (offload_optimizer / offload_param), pin_memory defaults to False.
        optimizer_impl="fused",
        loss="full",
        activation_checkpointing="none",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=False,
        pinned_host_memory=False,
        source=gettext_noop(
            "DeepSpeed config docs (zero_optimization.offload_optimizer / offload_param, "
            "pin_memory: false); Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840) §4"
        ),
        fp32_optimizer_partitions=True,
        # activation_checkpointing.cpu_checkpointing; zero_optimization.offload_optimizer and
        # offload_param (ZeRO-3 only).
        offloads=("activation_offloading", "optimizer_offload", "parameter_offload"),
    ),
    "fsdp2": Stack(
        label=gettext_noop("PyTorch FSDP2"),
        # fully_shard + torch.optim.AdamW (foreach on CUDA by default); CPUOffloadPolicy is
        # opt-in and pins host memory by default (pin_memory=True).
        optimizer_impl="foreach",
        loss="full",
        activation_checkpointing="none",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=False,
        adapters_in_compute_dtype=False,
        pinned_host_memory=True,
        source=gettext_noop(
            "torch.distributed.fsdp.CPUOffloadPolicy(pin_memory=True); torch.optim.AdamW "
            "(foreach default on CUDA)"
        ),
        # CPUOffloadPolicy moves the sharded parameters, their gradients and the optimizer.
        offloads=("optimizer_offload", "parameter_offload"),
    ),
    "megatron": Stack(
        label=gettext_noop("Megatron-LM (pretraining)"),
        # Apex / Transformer Engine FusedAdam; --recompute-activations (selective) and
        # --sequence-parallel, as Korthikanti et al. recommend for large models.
        optimizer_impl="fused",
        loss="full",
        activation_checkpointing="selective",
        activation_offloading=False,
        optimizer_offload=False,
        parameter_offload=False,
        sequence_parallel=True,
        adapters_in_compute_dtype=False,
        pinned_host_memory=False,
        resident_gradients=True,
        # Megatron-core's optimizer_cpu_offload (HybridDeviceOptimizer); its activation
        # offloading excludes recomputation, so it is not one of the switches here.
        offloads=("optimizer_offload",),
        source=gettext_noop(
            "NVIDIA/Megatron-LM arguments.py (--recompute-activations = selective granularity, "
            "--sequence-parallel); Korthikanti et al. 2022 (arXiv:2205.05198) §4-5"
        ),
    ),
}

SWITCHES = (
    "optimizer_impl",
    "loss",
    "activation_checkpointing",
    "activation_offloading",
    "optimizer_offload",
    "parameter_offload",
    "sequence_parallel",
)
# The switches as a sentence names them (the page translates each one).
SWITCH_NAMES = {
    "optimizer_impl": gettext_noop("optimizer implementation"),
    "loss": gettext_noop("loss"),
    "activation_checkpointing": gettext_noop("activation checkpointing"),
    "activation_offloading": gettext_noop("activation offloading"),
    "optimizer_offload": gettext_noop("optimizer offload"),
    "parameter_offload": gettext_noop("parameter offload"),
    "sequence_parallel": gettext_noop("sequence parallelism"),
}


def resolve_switches(request: EstimateRequest) -> StackSwitches:
    """The request's switches, each falling back to its stack's default when left unset.

    ``gradient_checkpointing=True`` (the older field) means ``activation_checkpointing='full'``
    unless ``activation_checkpointing`` is given.
    """
    stack = STACKS[request.training_stack]
    values: dict[str, str | bool] = {}
    from_stack: list[str] = []
    for name in SWITCHES:
        given = getattr(request, name)
        if name == "activation_checkpointing" and given is None and request.gradient_checkpointing:
            given = "full"
        if given is None:
            values[name] = getattr(stack, name)
            from_stack.append(name)
        else:
            values[name] = given
    return StackSwitches.model_validate(
        {"training_stack": request.training_stack, **values, "from_stack": from_stack}
    )

"""``estimate``: the one entry point the page, the API and the CLI share."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator import activations as act
from calculator.estimator.architecture import Architecture, ConfigError
from calculator.estimator.checkpoint import checkpoint_weight_bytes, note_checkpoint_bytes
from calculator.estimator.inference import cache_by_layer_kind, estimate_inference
from calculator.estimator.lora import adapter_params, module_shapes, resolve_targets
from calculator.estimator.loss import (
    TORCHTUNE_OUTPUT_CHUNKS,
    LossBytes,
    chunked_loss_bytes,
    full_loss_bytes,
    fused_linear_loss_bytes,
)
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.optimizer import (
    BNB_MIN_8BIT_SIZE,
    DEEPSPEED_MEMORY_DOCS,
    adafactor_state_elements,
    fp32_gradient_bytes,
    fp32_master_bytes,
    optimizer_profile,
)
from calculator.estimator.parallelism import Plan, plan_for
from calculator.estimator.precision import BYTES_PER_ELEMENT, WEIGHT_FORMATS, compute_dtype
from calculator.estimator.resolve import architecture_from_custom, resolve_architecture
from calculator.estimator.result import transformers_result
from calculator.estimator.schemas import (
    Breakdown,
    CustomModel,
    EstimateRequest,
    EstimateResult,
    HostBreakdown,
    StackSwitches,
)
from calculator.estimator.serving import (
    llama_cpp_layout,
    llama_cpp_options,
    llama_cpp_result,
    vllm_options,
    vllm_result,
)
from calculator.estimator.stacks import STACKS, Stack, resolve_switches
from calculator.estimator.weights import weight_bytes

# Importers of this module's earlier contents find them here still.
__all__ = [
    "architecture_from_custom",
    "cache_by_layer_kind",
    "checkpoint_weight_bytes",
    "estimate",
    "llama_cpp_layout",
    "llama_cpp_options",
    "resolve_architecture",
    "vllm_options",
]

FP32 = 4.0


def estimate(request: EstimateRequest) -> EstimateResult:
    """Per-GPU memory for one request: a breakdown, the peak of live tensors, and the total."""
    arch = resolve_architecture(request.model)
    plan = plan_for(
        num_gpus=request.num_gpus,
        tensor_parallel=request.tensor_parallel,
        zero_stage=request.zero_stage,
        pipeline_parallel=request.pipeline_parallel,
        context_parallel=request.context_parallel,
    )
    notes = Notes()
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
        result = llama_cpp_result(request, arch, notes)
    elif request.runtime == "vllm":
        result = vllm_result(request, arch, notes)
    elif request.mode == "inference":
        result = estimate_inference(request, arch, plan, notes)
    else:
        result = _training(request, arch, plan, notes)
    return result.model_copy(update={"image_tokens": image_tokens}) if image_tokens else result


def _training(
    request: EstimateRequest, arch: Architecture, plan: Plan, notes: Notes
) -> EstimateResult:
    mode = request.mode
    switches = resolve_switches(request)
    stack = STACKS[request.training_stack]
    seq_local = request.seq_len // plan.cp
    tokens = request.batch_size * seq_local
    params = arch.params_total
    lora = mode in {"lora", "qlora"}
    if request.training_stack != "hf_trainer":
        notes.add(
            gettext_noop("Training stack: %(stack)s, with its defaults for %(switches)s."),
            stack.source,
            stack=stack.label,
            switches=", ".join(switches.from_stack) or "-",
        )

    # --- dtypes -----------------------------------------------------------------------
    if mode == "qlora" and not stack.qlora_fp32_non_quantized:
        weight_format = "nf4"
        p = residual = other_bytes = BYTES_PER_ELEMENT[compute_dtype(request.precision)]
        autocast = False
        notes.add(
            gettext_noop(
                "QLoRA: base linears in NF4 with double quantization; embeddings, LM head and "
                "norms stay in %(dtype)s, as the stack loads them."
            ),
            WEIGHT_FORMATS["nf4"].source + "; " + stack.source,
            dtype=compute_dtype(request.precision),
        )
    elif mode == "qlora":
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
    adapter_bytes = p if (lora and stack.adapters_in_compute_dtype) else FP32
    # DeepSpeed trains 16-bit weights through an fp32 optimizer (master weights and states).
    fp32_partitions = stack.fp32_optimizer_partitions and not lora and param_bytes < FP32
    if lora and stack.adapters_in_compute_dtype:
        notes.add(
            gettext_noop(
                "LoRA adapters, their gradients and optimizer states in %(dtype)s (the stack "
                "trains in the model's dtype; PEFT's default would upcast them to fp32)."
            ),
            stack.source,
            dtype=compute_dtype(request.precision),
        )

    # --- parameters, adapters, gradients, optimizer ---------------------------------------
    # LoRA on a pre-quantized checkpoint (PEFT over AWQ, GPTQ, FP8 layers) freezes the tensors
    # the files store, as inference loads them; QLoRA quantizes a full-precision checkpoint.
    stored = checkpoint_weight_bytes(request) if mode == "lora" else None
    base = weight_bytes(
        arch,
        weight_format=weight_format,
        other_bytes=other_bytes,
        plan=plan,
        stored_bytes=stored,
    )
    if stored is not None:
        note_checkpoint_bytes(notes, request, stored, plan)
    targets = resolve_targets(arch, request.lora.targets) if lora else frozenset()
    adapters = adapter_params(arch, rank=request.lora.rank, targets=targets) if lora else 0
    trainable = adapters if lora else params
    trainable_bytes = adapter_bytes if lora else param_bytes
    shard_model = plan.tp
    trainable_local = trainable / shard_model

    gradients = trainable_local * trainable_bytes / plan.gradient_shards
    if plan.shard_group > 1 and plan.zero_stage == 0:
        gradients *= 2
        notes.add(
            gettext_noop(
                "Data parallel (DDP): gradient buckets double the gradient memory "
                "(gradient_as_bucket_view=False, the default)."
            ),
            gettext_noop("PyTorch DistributedDataParallel docs, gradient_as_bucket_view"),
        )
    state_dtype_bytes = FP32 if fp32_partitions else trainable_bytes
    profile = optimizer_profile(request.optimizer, state_dtype_bytes, switches.optimizer_impl)
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
        state_bytes = trainable_local * profile.state_bytes_per_param
        if profile.small_tensor_state_bytes is not None and not lora:
            small = _small_tensor_params(arch)
            state_bytes += small * (
                profile.small_tensor_state_bytes - profile.state_bytes_per_param
            )
        optimizer_states = state_bytes / plan.optimizer_shards
    step_temp = (
        trainable_local * state_dtype_bytes * profile.step_temp_fraction / plan.optimizer_shards
        + _largest_trainable_tensor(arch, lora=lora, rank=request.lora.rank, plan=plan)
        * trainable_bytes
        * profile.step_temp_largest_tensors
    )
    if request.optimizer == "adamw":
        step_note = {
            "fused": gettext_noop(
                "%(optimizer)s states for %(trainable)s trainable parameters; the fused step "
                "updates in place and needs no temporaries."
            ),
            "foreach": gettext_noop(
                "%(optimizer)s states for %(trainable)s trainable parameters; the foreach step "
                "holds one more state-sized temporary (the square root of the second moment)."
            ),
            "for_loop": gettext_noop(
                "%(optimizer)s states for %(trainable)s trainable parameters; the for-loop step "
                "holds temporaries of about three of the largest parameter tensor."
            ),
        }[switches.optimizer_impl]
    else:
        step_note = gettext_noop("%(optimizer)s states for %(trainable)s trainable parameters.")
    notes.add(step_note, profile.source, optimizer=profile.label, trainable=f"{trainable:,}")
    if profile.paged:
        notes.add(
            gettext_noop(
                "Paged optimizer: its states are in CUDA unified memory, counted here on the GPU; "
                "under memory pressure the driver moves them to CPU RAM page by page (slower)."
            ),
            profile.source,
        )

    # --- weights resident during forward/backward ----------------------------------------
    master = 0.0
    working_copies = 0.0
    if request.mixed_precision and not lora:
        # The fp32 master weights are part of the optimizer state ZeRO-1 already partitions
        # (Rajbhandari et al. 2020, arXiv:1910.02054 §5.1: K = 12 bytes of master, momentum and
        # variance per parameter; Megatron's distributed optimizer likewise, Megatron-LM#654).
        # base.data is already this GPU's ZeRO-3 shard: undo it before the optimizer's split.
        master = base.data * plan.parameter_shards / plan.optimizer_shards
        weights_resident = 0.0
        working_copies = min(arch.linear_params, params) / plan.tp * p
        if plan.zero_stage == 3:
            working_copies = 2 * arch.largest_layer_params / plan.tp * p
    else:
        weights_resident = float(base.data)
    step_gradients = gradients
    if fp32_partitions:
        master = fp32_master_bytes(trainable_local, plan.optimizer_shards)
        # The rank's 16-bit gradient partition becomes fp32 for the update.
        step_gradients = (
            gradients
            - trainable_local * trainable_bytes / plan.optimizer_shards
            + fp32_gradient_bytes(trainable_local, plan.optimizer_shards)
        )
        notes.add(
            gettext_noop(
                "%(stack)s with 16-bit weights: fp32 master weights and fp32 optimizer states, "
                "%(shards)s-way partitioned (12 bytes per parameter for Adam); the gradients "
                "are converted to fp32 for the step."
            ),
            "Rajbhandari et al. 2020 (arXiv:1910.02054) §5.1; " + DEEPSPEED_MEMORY_DOCS,
            stack=stack.label,
            shards=plan.optimizer_shards,
        )
    gather = 0.0
    if plan.zero_stage == 3 or switches.parameter_offload:
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
    if (
        (plan.zero_stage == 3 or switches.parameter_offload)
        and request.mixed_precision
        and not lora
    ):
        working_copies = gather
        gather = 0.0

    # --- offload to CPU RAM --------------------------------------------------------------
    host = _host_offload(
        request,
        switches,
        stack,
        plan=plan,
        trainable_local=trainable_local,
        trainable_bytes=trainable_bytes,
        optimizer_states=optimizer_states,
        master=master,
        # DeepSpeed's offload_param moves the 16-bit partition; its master stays the optimizer's.
        weights=weights_resident + (0.0 if fp32_partitions else master),
        lora=lora,
        notes=notes,
        host_gradient_bytes=FP32 if fp32_partitions else trainable_bytes,
    )
    if switches.optimizer_offload:
        optimizer_states = 0.0
        step_temp = 0.0
        master = 0.0
        # Gradients leave the GPU bucket by bucket as they are reduced (ZeRO-Offload §4.1).
        gradients = min(gradients, 2 * arch.largest_layer_params / plan.tp * trainable_bytes)
        step_gradients = gradients
    if switches.parameter_offload and not lora:
        weights_resident = 0.0
        if not fp32_partitions:
            master = 0.0

    # --- activations and logits ----------------------------------------------------------
    checkpointing = switches.activation_checkpointing
    setting = act.Setting(
        batch=request.batch_size,
        seq=seq_local,
        act_bytes=p,
        residual_bytes=residual,
        autocast=autocast,
        attention=request.attention,
        training=True,
        frozen_base=lora,
        plan=plan,
        lora_targets=targets,
        lora_rank=request.lora.rank if lora else 0,
        sequence_parallel=switches.sequence_parallel and plan.tp > 1,
        selective_recompute=checkpointing == "selective",
        adapter_bytes=adapter_bytes,
        fused_gelu=stack.own_model_code,
        quantized_base=mode == "qlora",
        fused_layer_kernels=stack.fused_layer_kernels,
    )
    one_layer = max(act.training_layer_bytes(arch, setting, i) for i in act.layer_samples(arch))
    working = max(
        act.backward_layer_working_bytes(arch, setting, i) for i in act.layer_samples(arch)
    )
    model_level = act.model_level_bytes(arch, setting)
    per_layer_kept = {
        index: (
            act.checkpointed_layer_bytes(arch, setting)
            if checkpointing == "full"
            else act.training_layer_bytes(arch, setting, index)
        )
        for index, _count in arch.layer_kinds
    }
    if checkpointing == "full":
        notes.add(
            gettext_noop(
                "Gradient checkpointing keeps each layer's input and recomputes one layer at a time "
                "in backward."
            ),
            gettext_noop(
                "Chen et al. 2016 (arXiv:1604.06174); transformers gradient_checkpointing_enable()"
            ),
        )
    elif checkpointing == "selective":
        notes.add(
            gettext_noop(
                "Selective recomputation: every layer keeps its activations except the attention "
                "scores, which backward recomputes."
            ),
            gettext_noop("Korthikanti et al. 2022 (arXiv:2205.05198) §4.2"),
        )
    if setting.sequence_parallel:
        notes.add(
            gettext_noop(
                "Sequence parallelism: norms, dropout and the residual stream are split across "
                "the %(tp)s tensor-parallel GPUs."
            ),
            gettext_noop("Korthikanti et al. 2022 (arXiv:2205.05198) §4.2.2"),
            tp=plan.tp,
        )
    recompute = one_layer if checkpointing == "full" else 0.0
    loss = _loss_bytes(
        arch,
        switches.loss,
        plan=plan,
        tokens=tokens,
        p=p,
        autocast=autocast,
        lora=lora,
        param_bytes=param_bytes,
        notes=notes,
    )

    # --- pipeline stages -------------------------------------------------------------------
    if plan.pp > arch.num_layers:
        raise ConfigError(
            f"pipeline_parallel ({plan.pp}) exceeds the model's {arch.num_layers} layers",
            "pipeline_parallel",
        )
    stages = _pipeline_stages(arch, plan, request.micro_batches)
    if plan.pp > 1:
        notes.add(
            gettext_noop(
                "Pipeline parallel, 1F1B schedule: stage k of %(stages)s keeps the activations of "
                "min(%(stages)s - k, micro-batches) micro-batches in flight; the first stage also "
                "holds the embedding, the last the LM head and the loss."
            ),
            gettext_noop(
                "Narayanan et al. 2021 (arXiv:2104.04473) §2.2.1; Korthikanti et al. 2022 "
                "(arXiv:2205.05198) §4.2.3"
            ),
            stages=plan.pp,
        )
    if plan.cp > 1:
        notes.add(
            gettext_noop(
                "Context parallel: each GPU holds %(tokens)s of the %(seq)s tokens of a sequence "
                "and their activations; keys and values of the other chunks pass through in turn."
            ),
            gettext_noop(
                "Megatron-LM context parallelism docs; Liu et al. 2023 (arXiv:2310.01889)"
            ),
            tokens=seq_local,
            seq=request.seq_len,
        )
    # A tied embedding's backward materialises a full vocabulary × hidden gradient before it is
    # added to the one the LM head already left in .grad (embedding_dense_backward, then
    # AccumulateGrad); untied embeddings write theirs straight into .grad.
    tied_grad = 0.0
    if arch.tie_word_embeddings and not lora:
        tied_grad = arch.embedding_params / plan.tp * trainable_bytes
    offload_activations = switches.activation_offloading
    best: tuple[int, str, Breakdown] | None = None
    host_activations = 0.0
    # A middle stage never peaks: the first has at least as many layers, more micro-batches in
    # flight and the embedding; only the last holds the LM head and the loss.
    for stage in stages if len(stages) < 3 else [stages[0], stages[-1]]:
        share = stage.param_share
        layer_share = stage.layers / arch.num_layers
        persist_share = layer_share if lora else share
        kept_layers = sum(count * per_layer_kept[index] for index, count in arch.layer_kinds) * (
            stage.layers / arch.num_layers
        )
        kept = stage.in_flight * kept_layers + (model_level if stage.last else 0.0)
        if offload_activations:
            host_activations = max(host_activations, kept - (model_level if stage.last else 0.0))
            # The layer being offloaded and the one being brought back stay on the GPU.
            kept = min(2, stage.layers) * (kept_layers / max(1, stage.layers)) + (
                model_level if stage.last else 0.0
            )
        loss_fwd = loss.forward if stage.last else 0.0
        loss_bwd = loss.backward if stage.last else 0.0
        resident = weights_resident * share
        stage_master = master * share
        stage_states = optimizer_states * persist_share
        stage_grads = gradients * persist_share
        stage_temp = step_temp * persist_share
        adapters_bytes = adapters / shard_model * adapter_bytes * layer_share
        stage_gather = gather
        common = {
            "master_weights": int(stage_master),
            "optimizer_states": int(stage_states),
            "adapters": int(adapters_bytes),
            "quantization_overhead": int(base.quantization_overhead * share),
        }
        # With several micro-batches in flight, gradients of earlier ones already exist.
        grads_early = (
            int(stage_grads)
            if stage.in_flight > 1 or plan.pp > 1 or stack.resident_gradients
            else 0
        )
        weights_fwd = int(resident + working_copies * share + stage_gather)
        weights_bwd = weights_fwd
        if autocast and checkpointing == "full" and not lora and plan.zero_stage != 3:
            # Autocast's cache of cast weights is dropped when the autocast region ends; with
            # checkpointing nothing inside a layer keeps them, so backward (which re-casts one
            # layer at a time) holds only the LM head's copy, saved outside the layers.
            head_copy = arch.lm_head_params / plan.tp * p if stage.last else 0.0
            weights_bwd = int(resident + stage_gather + head_copy)
        phases = {
            "forward (loss)": Breakdown(
                weights=weights_fwd,
                activations=int(kept),
                logits=int(loss_fwd),
                gradients=grads_early,
                **common,
            ),
            "backward (start)": Breakdown(
                weights=weights_bwd,
                activations=int(kept),
                logits=int(loss_bwd),
                gradients=grads_early,
                **common,
            ),
            # With checkpointing the last layer is recomputed only once the loss's gradient has
            # been reduced to the hidden states: the logit-sized tensors are gone by then.
            "backward (recompute)": Breakdown(
                weights=weights_bwd,
                activations=int(kept + recompute + working) if recompute else 0,
                gradients=grads_early,
                **common,
            ),
            "backward (end)": Breakdown(
                weights=int(resident + stage_gather),
                activations=int(working + recompute),
                gradients=int(stage_grads + (tied_grad if stage.index == 0 else 0.0)),
                **common,
            ),
            "optimizer step": Breakdown(
                weights=int(resident),
                gradients=int(step_gradients * persist_share),
                optimizer_states=int(stage_states + stage_temp),
                **{k: v for k, v in common.items() if k != "optimizer_states"},
            ),
        }
        phase, parts = max(phases.items(), key=lambda item: item[1].total())
        if best is None or parts.total() > best[2].total():
            best = (stage.index, phase, parts)
    assert best is not None
    peak_stage, phase, peak_parts = best
    if offload_activations:
        host = host.model_copy(
            update={
                "activations": int(host_activations),
                "pinned": host.pinned + (int(host_activations) if stack.pinned_host_memory else 0),
            }
        )
        notes.add(
            gettext_noop(
                "Activation offloading: the checkpointed activations (%(gib)s GiB) wait in CPU "
                "RAM; the GPU keeps the layers being copied out and brought back."
            ),
            stack.source,
            gib=round(host_activations / 2**30, 2),
        )
    result = transformers_result(
        request, arch, peak_parts, phase=phase, trainable=int(trainable), notes=notes, training=True
    )
    return result.model_copy(
        update={
            "host_bytes": host.total(),
            "host_breakdown": host,
            "switches": switches,
            "peak_stage": peak_stage if plan.pp > 1 else None,
            "checkpoint_weight_bytes": stored,
        }
    )


@dataclass(frozen=True)
class _Stage:
    index: int
    layers: int
    in_flight: int
    param_share: float
    """This stage's parameters as a fraction of the model's."""
    last: bool


def _pipeline_stages(arch: Architecture, plan: Plan, micro_batches: int | None) -> list[_Stage]:
    """Layers, parameters and in-flight micro-batches of each pipeline stage.

    Layers are split evenly (the first stages take the remainder). Under 1F1B the first stage
    runs ``pp`` forward passes before its first backward, so stage ``k`` keeps
    ``min(pp - k, m)`` micro-batches of activations (Narayanan et al. 2021, arXiv:2104.04473
    §2.2.1). The first stage holds the embedding; the last the final norm and the LM head, and a
    second copy of a tied embedding (Megatron-LM keeps the word embeddings on both ends).
    """
    if plan.pp == 1:
        return [_Stage(index=0, layers=arch.num_layers, in_flight=1, param_share=1.0, last=True)]
    total = arch.params_total
    layer_total = sum(count * arch.layer_params(index) for index, count in arch.layer_kinds)
    per_layer = layer_total / arch.num_layers
    head = arch.lm_head_params or arch.embedding_params
    rest = max(0, total - layer_total - arch.embedding_params - arch.lm_head_params)
    m = micro_batches or plan.pp
    base, extra = divmod(arch.num_layers, plan.pp)
    stages = []
    for k in range(plan.pp):
        layers = base + (1 if k < extra else 0)
        stage_params = layers * per_layer
        if k == 0:
            stage_params += arch.embedding_params
        if k == plan.pp - 1:
            stage_params += head + rest
        stages.append(
            _Stage(
                index=k,
                layers=layers,
                in_flight=min(plan.pp - k, m),
                param_share=stage_params / total if total else 0.0,
                last=k == plan.pp - 1,
            )
        )
    return stages


def _small_tensor_params(arch: Architecture) -> int:
    """Parameters in tensors under bitsandbytes' ``min_8bit_size`` (4096 elements): the norm
    weights when the hidden size is below it."""
    if arch.hidden_size >= BNB_MIN_8BIT_SIZE:
        return 0
    norms = arch.num_layers * (arch.pre_norms_per_layer + arch.post_norms_per_layer)
    return (norms + (1 if arch.final_norm else 0)) * arch.hidden_size


def _largest_trainable_tensor(arch: Architecture, *, lora: bool, rank: int, plan: Plan) -> float:
    """Elements of the largest trainable tensor on one GPU (for per-tensor optimizer loops)."""
    if lora:
        return rank * max(arch.hidden_size, arch.intermediate_size, arch.moe_intermediate_size)
    width = arch.embedding_width or arch.hidden_size
    inner = max(arch.intermediate_size, arch.moe_intermediate_size)
    return max(arch.vocab_size * width, arch.hidden_size * inner) / plan.tp


def _loss_bytes(
    arch: Architecture,
    loss: str,
    *,
    plan: Plan,
    tokens: int,
    p: float,
    autocast: bool,
    lora: bool,
    param_bytes: float,
    notes: Notes,
) -> LossBytes:
    vocab_local = arch.vocab_size / plan.tp
    if loss == "chunked":
        notes.add(
            gettext_noop(
                "Chunked loss: the LM head and the fp32 upcast run on %(chunks)s chunks of "
                "positions; the fp32 log-probabilities of all chunks stay saved for backward."
            ),
            gettext_noop("torchtune CEWithChunkedOutputLoss; LitGPT chunked_cross_entropy"),
            chunks=TORCHTUNE_OUTPUT_CHUNKS,
        )
        return chunked_loss_bytes(tokens=tokens, vocab=vocab_local, logit_bytes=p)
    if loss == "fused_linear":
        notes.add(
            gettext_noop(
                "Fused linear cross-entropy: the LM head and the loss run chunk by chunk and the "
                "full logits never exist; the gradients of the hidden states are formed in forward."
            ),
            gettext_noop("Liger-Kernel ops/fused_linear_cross_entropy.py"),
        )
        head = (arch.lm_head_params or arch.embedding_params) / plan.tp
        return fused_linear_loss_bytes(
            tokens=tokens,
            vocab=vocab_local,
            hidden=arch.hidden_size,
            act_bytes=p,
            head_params_local=head,
            head_trainable=not lora,
            param_bytes=param_bytes,
        )
    notes.add(
        gettext_noop(
            "Loss over every position with logits upcast to fp32 (transformers ForCausalLMLoss); the "
            "backward of cross-entropy holds three fp32 logit-sized tensors at once."
        ),
        gettext_noop(
            "transformers loss_utils.ForCausalLMLoss; PyTorch log_softmax/nll_loss backward"
        ),
    )
    return full_loss_bytes(
        tokens=tokens,
        vocab=vocab_local,
        logit_bytes=p,
        fp32_model=p == FP32 and not autocast,
        softcap=bool(arch.final_logit_softcapping),
    )


def _host_offload(
    request: EstimateRequest,
    switches: StackSwitches,
    stack: Stack,
    *,
    plan: Plan,
    trainable_local: float,
    trainable_bytes: float,
    optimizer_states: float,
    master: float,
    weights: float,
    lora: bool,
    notes: Notes,
    host_gradient_bytes: float,
) -> HostBreakdown:
    """CPU RAM per GPU process for offloaded optimizer states and parameters.

    ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840 §4.1) keeps the 16-bit parameters on the GPU
    and moves the 16-bit gradients, the fp32 master parameters and both fp32 Adam moments to the
    CPU, where DeepSpeedCPUAdam runs the step; each data-parallel rank keeps its 1/N partition.
    DeepSpeed holds those gradients in fp32 (``host_gradient_bytes`` 4: 16 bytes per parameter
    with the master weights and moments, its memory docs' ZeRO-3 CPU formula).
    FSDP2's ``CPUOffloadPolicy`` keeps sharded parameters, gradients and the optimizer on the CPU.
    """
    host = HostBreakdown()
    if switches.optimizer_offload:
        shards = max(plan.optimizer_shards, plan.gradient_shards)
        cpu_states = trainable_local * 2 * FP32 / plan.optimizer_shards
        if request.optimizer != "adamw":
            cpu_states = optimizer_states
        cpu_master = (
            master
            if master
            else (trainable_local * FP32 / plan.optimizer_shards if trainable_bytes != FP32 else 0)
        )
        cpu_grads = trainable_local * host_gradient_bytes / shards
        host = host.model_copy(
            update={
                "optimizer_states": int(cpu_states),
                "master_weights": int(cpu_master),
                "gradients": int(cpu_grads),
            }
        )
        notes.add(
            gettext_noop(
                "Optimizer offload: fp32 master weights, optimizer states and gradients in CPU "
                "RAM (%(gib)s GiB per GPU); the step runs on the CPU."
            ),
            gettext_noop("Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840) §4.1")
            + "; "
            + stack.source,
            gib=round((cpu_states + cpu_master + cpu_grads) / 2**30, 2),
        )
    if switches.parameter_offload and not lora:
        cpu_params = weights / max(1, plan.shard_group if plan.zero_stage < 3 else 1)
        host = host.model_copy(update={"parameters": int(cpu_params)})
        notes.add(
            gettext_noop(
                "Parameter offload: this GPU's parameter shard waits in CPU RAM and each layer is "
                "fetched when it runs."
            ),
            gettext_noop("DeepSpeed ZeRO-3 offload_param; PyTorch FSDP2 CPUOffloadPolicy"),
        )
    if stack.pinned_host_memory:
        host = host.model_copy(update={"pinned": host.total()})
    return host

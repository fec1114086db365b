"""The estimator's contract: what it takes (``EstimateRequest``) and what it returns."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from calculator.estimator.bounds import (
    MAX_BATCH,
    MAX_GPU_MEMORY_BYTES,
    MAX_GPUS,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_PARAMS_BILLION,
    MAX_SEQ_LEN,
    DocumentError,
    check_config_document,
)
from calculator.estimator.runtimes.llama_cpp import LlamaCppOptions, LlamaCppResult
from calculator.estimator.runtimes.vllm import KvCacheDtype, Quantization, VllmResult

Mode = Literal["inference", "full_finetune", "lora", "qlora", "pretrain"]
Precision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4", "int2"]
KvPrecision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
Optimizer = Literal[
    "adamw",
    "adamw_8bit",
    "paged_adamw",
    "paged_adamw_8bit",
    "sgd",
    "sgd_momentum",
    "adafactor",
    "lion",
]
OptimizerImpl = Literal["fused", "foreach", "for_loop"]
TrainingStack = Literal[
    "hf_trainer",
    "hf_trainer_liger",
    "unsloth",
    "torchtune",
    "litgpt",
    "deepspeed",
    "fsdp2",
    "megatron",
]
LossImpl = Literal["full", "chunked", "fused_linear"]
Checkpointing = Literal["none", "full", "selective"]
Attention = Literal["flash", "eager"]
Runtime = Literal["transformers", "llama_cpp", "vllm"]
LoraTarget = Literal[
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
    # Fused projections (Phi-3/Phi-4's ``qkv_proj`` and ``gate_up_proj``) and MLA's own linears
    # (DeepSeek-V2/V3, GLM-4 MoE Lite): the module names PEFT matches in those models.
    "qkv_proj",
    "gate_up_proj",
    "q_a_proj",
    "q_b_proj",
    "kv_a_proj_with_mqa",
    "kv_b_proj",
]

TRAINING_MODES: frozenset[str] = frozenset({"full_finetune", "pretrain", "lora", "qlora"})
FLOAT_PRECISIONS: frozenset[str] = frozenset({"fp32", "fp16", "bf16"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class _ModelDescription(_Frozen):
    """Base of the model descriptions: remembers its resolved architecture and a stable key,
    so searches that vary only the workload (levers, tier tables) parse a config once."""

    _architecture: Any = PrivateAttr(default=None)
    _key: str | None = PrivateAttr(default=None)

    def cache_key(self) -> str:
        if self._key is None:
            self._key = hashlib.sha256(self.model_dump_json().encode()).hexdigest()
        return self._key


class ConfigModel(_ModelDescription):
    """A Hugging Face ``config.json``, as published."""

    config: dict[str, Any] = Field(description="The model's config.json object.")
    checkpoint_dtypes: dict[str, int] | None = Field(
        default=None,
        description="Tensor elements per safetensors dtype of the published checkpoint (the "
        'Hub\'s safetensors metadata, e.g. {"I32": …, "F16": …}). A pre-quantized '
        "checkpoint estimated in its own format then takes exactly these bytes as its weights.",
    )

    @field_validator("config")
    @classmethod
    def _a_config_document(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Here, not only when the architecture is read: the description's cache key serialises
        # the whole document first. The error is located at the offending key.
        try:
            check_config_document(value)
        except DocumentError as error:
            detail = InitErrorDetails(
                type=PydanticCustomError("config_document", "{reason}", {"reason": str(error)}),
                loc=error.path,
                input=value,
            )
            raise ValidationError.from_exception_data("config", [detail]) from error
        return value

    @field_validator("checkpoint_dtypes")
    @classmethod
    def _counts_not_negative(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is not None and any(count < 0 for count in value.values()):
            raise ValueError("element counts cannot be negative")
        if value is not None and sum(value.values()) > MAX_PARAMS:
            raise ValueError(f"more than {MAX_PARAMS:.0e} stored elements describe no checkpoint")
        return value


class CustomModel(_ModelDescription):
    """A model described by its size and, optionally, its shape."""

    params_billion: float | None = Field(
        default=None, gt=0, le=MAX_PARAMS_BILLION, description="Total parameters, in billions."
    )
    num_layers: int | None = Field(default=None, gt=0, le=MAX_LAYERS)
    hidden_size: int | None = Field(default=None, gt=0, le=1_000_000)
    num_attention_heads: int | None = Field(default=None, gt=0, le=10_000)
    num_kv_heads: int | None = Field(default=None, gt=0, le=10_000)
    head_dim: int | None = Field(default=None, gt=0, le=100_000)
    intermediate_size: int | None = Field(default=None, gt=0, le=10_000_000)
    vocab_size: int | None = Field(default=None, gt=0, le=100_000_000)
    num_experts: int | None = Field(default=None, ge=0, le=100_000)
    experts_per_token: int | None = Field(default=None, ge=0, le=100_000)
    tie_word_embeddings: bool = False

    @model_validator(mode="after")
    def _needs_size_or_shape(self) -> CustomModel:
        shape = (self.num_layers, self.hidden_size)
        if self.params_billion is None and None in shape:
            raise ValueError("give params_billion, or at least num_layers and hidden_size")
        if (self.num_experts or 0) and not self.experts_per_token:
            raise ValueError("experts_per_token is required when num_experts is set")
        if (self.experts_per_token or 0) > (self.num_experts or 0):
            raise ValueError("experts_per_token cannot exceed num_experts")
        return self


class LoraSettings(_Frozen):
    rank: int = Field(default=16, ge=1, le=65_536, description="LoRA rank r.")
    targets: list[LoraTarget] | Literal["all-linear"] = Field(
        default_factory=lambda: list[LoraTarget](["q_proj", "v_proj"]),
        description="Modules that get adapters, or 'all-linear' (every linear but the LM head).",
    )

    @field_validator("targets")
    @classmethod
    def _non_empty(cls, value: list[str] | str) -> list[str] | str:
        if isinstance(value, list) and not value:
            raise ValueError("choose at least one target module")
        return value


def model_kind(value: Any) -> str:
    """Which description a ``model`` object is, from its keys (so errors name one schema)."""
    if isinstance(value, dict):
        if "config" in value:
            return "config"
        return "preset" if "preset" in value else "custom"
    return {"ConfigModel": "config", "CustomModel": "custom"}.get(type(value).__name__, "preset")


ModelSpec = Annotated[
    Annotated[ConfigModel, Tag("config")] | Annotated[CustomModel, Tag("custom")],
    Discriminator(model_kind),
]


class VllmSettings(_Frozen):
    """``vllm serve`` options (defaults are vLLM's own; ``None`` lets vLLM choose for the GPU and
    model). Tensor parallelism is the request's ``tensor_parallel``."""

    gpu_memory_bytes: int | None = Field(
        default=None,
        gt=0,
        le=MAX_GPU_MEMORY_BYTES,
        description="Total memory CUDA reports for one GPU; the page and the API fill it from the "
        "chosen catalogue GPU. Required in a bare estimator request.",
    )
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = Field(
        default=None, ge=1, le=MAX_SEQ_LEN, description="Default: the model's context window."
    )
    max_num_seqs: int | None = Field(default=None, ge=1, le=100_000)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=MAX_SEQ_LEN)
    kv_cache_dtype: KvCacheDtype = "auto"
    quantization: Quantization | None = Field(
        default=None,
        description="Default: what the checkpoint's quantization_config says, else none.",
    )
    enforce_eager: bool = False
    block_size: int = Field(default=16, ge=1, le=1024)


class EstimateRequest(_Frozen):
    model: ModelSpec
    mode: Mode = "inference"
    precision: Precision = Field(default="bf16", description="Weight precision.")
    mixed_precision: bool = Field(
        default=False,
        description="Training only: fp32 weights with autocast to `precision` (Trainer bf16=True).",
    )
    optimizer: Optimizer = "adamw"
    batch_size: int = Field(default=1, ge=1, le=MAX_BATCH, description="Sequences per GPU.")
    seq_len: int = Field(default=2048, ge=1, le=MAX_SEQ_LEN, description="Tokens per sequence.")
    gradient_checkpointing: bool = Field(
        default=False,
        description="Alias of activation_checkpointing='full' (kept for old links); False means "
        "'no opinion': the stack's default applies unless activation_checkpointing is set.",
    )
    training_stack: TrainingStack = Field(
        default="hf_trainer",
        description="The training framework; its documented defaults fill every switch left "
        "unset (optimizer_impl, loss, activation_checkpointing, offloading).",
    )
    optimizer_impl: OptimizerImpl | None = Field(
        default=None,
        description="How the optimizer step runs: 'fused' (one kernel, no temporaries; HF "
        "Trainer's adamw_torch_fused), 'foreach' (multi-tensor, one state-sized temporary) or "
        "'for_loop'. Default: the stack's.",
    )
    loss: LossImpl | None = Field(
        default=None,
        description="'full' (logits for every position, upcast to fp32), 'chunked' (LM head "
        "and fp32 upcast per chunk) or 'fused_linear' (LM head fused into the loss, no full "
        "logits). Default: the stack's.",
    )
    activation_checkpointing: Checkpointing | None = Field(
        default=None,
        description="'none', 'full' (each layer keeps its input) or 'selective' (attention "
        "core recomputed, Korthikanti et al. 2022). Default: the stack's.",
    )
    activation_offloading: bool | None = Field(
        default=None,
        description="Checkpointed layer inputs are moved to CPU RAM. Default: the stack's.",
    )
    optimizer_offload: bool | None = Field(
        default=None,
        description="Optimizer states (and fp32 master weights) in CPU RAM, the step on the "
        "CPU (ZeRO-Offload, FSDP CPUOffload). Default: the stack's.",
    )
    parameter_offload: bool | None = Field(
        default=None,
        description="Parameters kept in CPU RAM and fetched layer by layer (ZeRO-3 / FSDP "
        "offload). Default: the stack's.",
    )
    sequence_parallel: bool | None = Field(
        default=None,
        description="Megatron sequence parallelism: norms, dropout and the residual stream split "
        "across the tensor-parallel group. Default: the stack's.",
    )
    attention: Attention = "flash"
    kv_cache_precision: KvPrecision | None = Field(
        default=None, description="KV-cache dtype; default: the compute dtype."
    )
    lora: LoraSettings = Field(default_factory=LoraSettings)
    num_gpus: int = Field(default=1, ge=1, le=MAX_GPUS)
    zero_stage: Literal[0, 1, 2, 3] = Field(default=0, description="ZeRO / FSDP sharding stage.")
    tensor_parallel: int = Field(default=1, ge=1, le=MAX_GPUS)
    pipeline_parallel: int = Field(
        default=1, ge=1, le=MAX_GPUS, description="Pipeline stages (1F1B schedule)."
    )
    context_parallel: int = Field(
        default=1,
        ge=1,
        le=MAX_GPUS,
        description="Context-parallel ranks: each holds seq_len / context_parallel tokens.",
    )
    micro_batches: int | None = Field(
        default=None,
        ge=1,
        le=MAX_BATCH,
        description="Micro-batches per step with pipeline parallelism (default: the number of "
        "stages); batch_size is the micro-batch size.",
    )
    images_per_request: int | None = Field(
        default=None,
        ge=0,
        le=1_000,
        description="Images in each sequence for a vision-language model (default 1); their "
        "tokens are added to seq_len. Ignored for text-only models.",
    )
    runtime: Runtime = Field(
        default="transformers",
        description="transformers: one Hugging Face prefill (precision, seq_len, batch_size "
        "apply). llama_cpp: llama.cpp / Ollama / LM Studio with a GGUF file (the `llama_cpp` "
        "options apply). vllm: vLLM's start-up budget and KV-cache pool (the `vllm` options "
        "apply). Inference only.",
    )
    llama_cpp: LlamaCppOptions | None = Field(
        default=None,
        description="llama.cpp options; default: llama-server's defaults with n_ctx = seq_len × "
        "batch_size and n_parallel = batch_size.",
    )
    vllm: VllmSettings | None = None
    prompt_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_SEQ_LEN,
        description="Speed only: the prompt whose time to first token is estimated (default: "
        "seq_len).",
    )
    train_tokens: float | None = Field(
        default=None,
        gt=0,
        le=1e15,
        description="Speed only, training modes: tokens to train on, for the time and cost.",
    )
    price_per_gpu_hour: float | None = Field(
        default=None,
        ge=0,
        le=10_000,
        description="Speed only: price of one GPU-hour, for the cost.",
    )
    host_memory_bandwidth_gb_s: float | None = Field(
        default=None,
        gt=0,
        le=10_000,
        description="Speed only, llama.cpp with layers on the CPU: system RAM bandwidth in GB/s.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> EstimateRequest:
        model_parallel = self.tensor_parallel * self.pipeline_parallel * self.context_parallel
        if self.num_gpus % model_parallel:
            raise ValueError(
                f"num_gpus ({self.num_gpus}) must be data_parallel x tensor_parallel "
                f"({self.tensor_parallel}) x pipeline_parallel ({self.pipeline_parallel}) x "
                f"context_parallel ({self.context_parallel}); {model_parallel} does not divide it"
            )
        if self.mode == "inference" and (self.pipeline_parallel > 1 or self.context_parallel > 1):
            raise ValueError(
                "pipeline_parallel and context_parallel apply to training; use tensor_parallel "
                "for inference"
            )
        if self.seq_len % self.context_parallel:
            raise ValueError("context_parallel must divide seq_len")
        if self.mode in {"full_finetune", "pretrain"} and self.precision not in FLOAT_PRECISIONS:
            raise ValueError(
                f"{self.mode} needs fp32, fp16 or bf16 weights; quantized weights cannot be trained "
                "directly (use lora or qlora)"
            )
        if self.mixed_precision and self.precision not in {"fp16", "bf16"}:
            raise ValueError("mixed precision autocasts to fp16 or bf16; choose one of them")
        if self.mode == "inference" and self.zero_stage:
            raise ValueError("ZeRO sharding applies to training; use tensor_parallel for inference")
        if self.runtime != "transformers" and self.mode != "inference":
            raise ValueError(
                f"the {self.runtime} runtime serves inference only; choose mode inference"
            )
        if self.runtime == "llama_cpp":
            self._check_llama_cpp_devices()
        return self

    def _check_llama_cpp_devices(self) -> None:
        """llama.cpp splits layers over the GPUs of one process; it has no tensor parallelism
        of the kind tensor_parallel means, and a per-GPU list must name every GPU."""
        if self.tensor_parallel > 1:
            raise ValueError(
                "llama.cpp splits the layers over the GPUs (llama_cpp.split_mode); set "
                "tensor_parallel to 1"
            )
        options = self.llama_cpp
        if options is None:
            return
        for name in ("tensor_split", "device_memory_bytes"):
            values = getattr(options, name)
            if values is not None and len(values) != self.num_gpus:
                raise ValueError(
                    f"llama_cpp.{name} has {len(values)} values for {self.num_gpus} GPU(s)"
                )
        if options.main_gpu >= self.num_gpus:
            raise ValueError(f"llama_cpp.main_gpu must be below num_gpus ({self.num_gpus})")

    @model_validator(mode="after")
    def _vllm_knows_gpu_memory(self) -> EstimateRequest:
        if self.runtime == "vllm" and (self.vllm is None or self.vllm.gpu_memory_bytes is None):
            raise ValueError(
                "the vllm runtime needs vllm.gpu_memory_bytes (the GPU's total memory)"
            )
        return self


class Assumption(_Frozen):
    text: str = Field(description="The assumption, in English.")
    template: str = Field(description="The same with %(name)s placeholders, for translation.")
    params: dict[str, str | int | float] = Field(default_factory=dict)
    source: str = Field(description="Paper, documentation or code the assumption follows.")


class Breakdown(_Frozen):
    """Bytes per GPU by component (integers; zero where a component does not apply)."""

    weights: int = 0
    kv_cache: int = 0
    activations: int = 0
    logits: int = 0
    gradients: int = 0
    optimizer_states: int = 0
    master_weights: int = 0
    adapters: int = 0
    quantization_overhead: int = 0
    cuda_context: int = 0
    allocator_reserve: int = 0

    def total(self) -> int:
        return sum(self.model_dump().values())


Holds = Literal["kv_cache", "recurrent_state", "kv_cache+recurrent_state", "nothing"]


class LayerKind(_Frozen):
    """Layers of one kind and what each keeps between forward passes (the cache)."""

    kind: str = Field(
        description="attention, sliding_attention, mamba, mamba2, gated_deltanet, "
        "short_conv, lightning, attention+mamba2, or mlp (no token mixer)."
    )
    layers: int
    holds: Holds
    cache_bytes: int = Field(description="Bytes all layers of this kind hold, per GPU.")


class HostBreakdown(_Frozen):
    """Bytes of CPU RAM per GPU's process that offloading puts on the host."""

    parameters: int = 0
    gradients: int = 0
    optimizer_states: int = 0
    master_weights: int = 0
    activations: int = 0
    pinned: int = Field(
        default=0,
        description="How much of the above the stack page-locks (pinned memory cannot be "
        "swapped out); already counted in the other fields.",
    )

    def total(self) -> int:
        return sum(value for name, value in self.model_dump().items() if name != "pinned")


class StackSwitches(_Frozen):
    """The switches the estimate used: the request's where given, else the stack's defaults."""

    training_stack: TrainingStack
    optimizer_impl: OptimizerImpl
    loss: LossImpl
    activation_checkpointing: Checkpointing
    activation_offloading: bool
    optimizer_offload: bool
    parameter_offload: bool
    sequence_parallel: bool
    from_stack: list[str] = Field(
        description="Switches whose value came from the stack's defaults, not the request."
    )


class EstimateResult(_Frozen):
    breakdown: Breakdown
    peak_allocated_bytes: int = Field(
        description="Most that live tensors reach per GPU (torch.cuda.max_memory_allocated)."
    )
    total_bytes: int = Field(
        description="What nvidia-smi would show per GPU: peak + CUDA context + allocator reserve."
    )
    peak_phase: str = Field(
        description="Where the peak happens (forward, backward, optimizer step)."
    )
    params_total: int
    params_trainable: int
    params_active: int
    num_gpus: int
    assumptions: list[Assumption]
    approximate: bool = Field(
        default=False,
        description="The model's family is not verified: its config was read by the generic "
        "(Llama-shaped) reader.",
    )
    approximate_reason: str | None = Field(
        default=None, description="Why the estimate is approximate, and how far off such are."
    )
    layer_kinds: list[LayerKind] = Field(
        default_factory=list,
        description="Inference: which layers hold a KV cache and which a fixed recurrent state.",
    )
    image_tokens: int = Field(
        default=0, description="Tokens the request's images add to each sequence (VLMs)."
    )
    runtime: Runtime = "transformers"
    checkpoint_weight_bytes: int | None = Field(
        default=None,
        description="When the weights are the published checkpoint's own bytes (a pre-quantized "
        "checkpoint in its own format, with the model's checkpoint_dtypes): what all its tensors "
        "occupy as stored, scales and zero points included; the weights per GPU are its share.",
    )
    host_bytes: int = Field(
        default=0,
        description="CPU RAM the run needs besides the GPU, per GPU: llama.cpp layers and "
        "buffers kept on the host, or what training offloads (multiply by GPUs per node for a "
        "node's RAM); zero when nothing is on the host.",
    )
    host_breakdown: HostBreakdown = Field(default_factory=HostBreakdown)
    switches: StackSwitches | None = Field(
        default=None, description="Training: the stack switches the estimate used."
    )
    peak_stage: int | None = Field(
        default=None,
        description="Pipeline parallel: the stage (0 = first) whose GPUs peak highest.",
    )
    llama_cpp: LlamaCppResult | None = Field(
        default=None, description="The buffers llama.cpp prints at load (runtime llama_cpp)."
    )
    vllm: VllmResult | None = Field(
        default=None, description="vLLM's start-up memory accounting (runtime vllm)."
    )

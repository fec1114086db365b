"""vLLM's start-up memory budget: weights, profiling peak, non-torch memory, then the KV-cache pool.

Facts read from https://github.com/vllm-project/vllm (V1 engine; no code copied):

- ``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory`` with ``vllm/utils`` ``memory_profiling``:
  ``kv_cache = total · gpu_memory_utilization − (weights + torch peak increase of the profile run +
  non-torch increase)``, all per GPU (per tensor-parallel rank); ``total`` is what CUDA reports.
- ``vllm/v1/worker/gpu_model_runner.py`` ``profile_run``: a dummy forward of ``max_num_batched_tokens``
  tokens over ``min(max_num_seqs, tokens)`` requests, then a dummy sampler run over
  ``num_reqs × vocab`` f32 logits (sorting for top-k/top-p makes more copies).
- ``vllm/v1/core/kv_cache_utils.py``: ``num_blocks = available // page_size // num_layers``; tokens =
  blocks × ``block_size`` (16 on CUDA); max concurrency = blocks ÷ ``cdiv(max_model_len, block_size)``;
  layers of different attention types are grouped so each group shares the block pool.
- ``vllm/engine/arg_utils.py``: defaults of the OpenAI server — on GPUs with ≥ 70 GiB, 8192 batched
  tokens and 1024 sequences; otherwise 2048 and 256; ``gpu_memory_utilization`` 0.9.
- ``vllm/model_executor/layers/vocab_parallel_embedding.py``: the vocabulary is padded to a multiple
  of 64; ``rotary_embedding`` keeps a ``max_position × rotary_dim`` cos/sin cache in the model dtype.
- Quantized linear layers: AWQ/GPTQ pack 4-bit weights with an fp16 scale and a 4-bit zero per group
  of 128 (``awq.py``/``gptq.py``); FP8 and INT8 (W8A8) store one byte per weight with per-channel or
  per-tensor scales; bitsandbytes NF4 keeps an absmax per block of 64; MXFP4 (gpt-oss experts)
  stores 4-bit values with one 8-bit scale per 32.
- ``vllm/model_executor/layers/quantization/mxfp4.py`` ``Mxfp4MoEMethod.create_weights`` (read at
  commit 007d50058a06dec0f82472d63c819244d460c40d): the expert tensors are allocated padded for the
  MoE kernel. The Marlin kernel needs ``n % 256 == 0`` and ``k % 128 == 0``, so the hidden size is
  rounded up to 256 and each rank's intermediate size to 128 (gpt-oss: 2880 x 2880 becomes
  3072 x 2944). Other backends pad less (Triton: intermediate to 64, then its own swizzled layout;
  FlashInfer on SM100: both to 256); the start-up logs in validation/published/vllm_logs.json put
  the Triton layout within 3% of Marlin's, so the Marlin padding is the one modelled.

Where SGLang's memory pool differs (``ModelRunner.profile_max_num_token`` in
https://github.com/sgl-project/sglang ``python/sglang/srt/model_executor/model_runner.py``, read in
its early-2025 form; newest stored snapshot 01cc04e2b5b01ce379698a3fee1bd17706e1d0ec):

- Budget: ``pool = free memory after the weights are loaded − total × (1 − mem_fraction_static)``.
  ``--mem-fraction-static`` is the share of the card for weights *and* KV pool together; what the
  weights leave of it is the pool. vLLM instead takes ``total × gpu_memory_utilization`` and
  subtracts weights, a measured activation peak and non-torch memory.
- No profiling forward: activations, the sampler, CUDA graphs and NCCL buffers must fit in the
  ``1 − mem_fraction_static`` left over, so a too-high fraction fails later (out of memory at run
  time), not at start-up as vLLM's does.
- Memory used by other processes is subtracted implicitly (the pool is measured from free memory).
- Pool unit: tokens (``max_total_num_tokens``, page size 1 by default) of ``kv_heads / tp ×
  head_dim × layers × 2 × dtype`` bytes each (MLA: ``(kv_lora_rank + qk_rope_head_dim) × layers``),
  not 16-token blocks; the log prints the K and V pool sizes and ``max_total_num_tokens``.
- The default ``mem_fraction_static`` is not a constant 0.9: ``server_args.py`` picks it from the GPU
  memory and the parallel sizes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from calculator.estimator.architecture import Architecture

GIB = 1 << 30

Quantization = Literal["none", "fp8", "int8", "awq", "gptq", "bitsandbytes", "mxfp4"]
KvCacheDtype = Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]

# The GPUs vLLM serves on: NVIDIA (CUDA), AMD (ROCm) and Intel (XPU, and Gaudi through its
# plugin); on macOS it runs on the CPU only (docs.vllm.ai/en/v0.14.0/getting_started/
# installation/), so an Apple GPU holds none of it. Which --quantization has kernels for which
# GPUs is vLLM's "Supported Hardware" table (docs.vllm.ai/en/v0.14.0/features/quantization/):
# on AMD GPUs FP8 only, and FP8 W8A8 needs FP8 in hardware (MI300 and later; the MI250's CDNA2
# has none); on Intel GPUs AWQ and GPTQ; on NVIDIA GPUs all of them, FP8 as W8A8 on Ada and
# Hopper and weight-only through Marlin on Turing and Ampere (docs .../quantization/fp8/).
# MXFP4 is not in the table and is not restricted here.
VLLM_VENDORS = frozenset({"nvidia", "amd", "intel"})
VENDOR_QUANTIZATIONS: dict[str, frozenset[str] | None] = {
    "nvidia": None,
    "amd": frozenset({"none", "fp8", "mxfp4"}),
    "intel": frozenset({"none", "awq", "gptq", "mxfp4"}),
}
FP8_QUANTIZATIONS = frozenset({"fp8"})


def unsupported_gpu(*, vendor: str, fp8_support: bool, quantization: str) -> str | None:
    """Why vLLM does not serve ``quantization`` on a GPU of ``vendor`` ('platform': no vLLM on
    that GPU; 'quantization': no kernel for it there), or None when it does."""
    if vendor not in VLLM_VENDORS:
        return "platform"
    allowed = VENDOR_QUANTIZATIONS[vendor]
    if allowed is not None and quantization not in allowed:
        return "quantization"
    if vendor != "nvidia" and quantization in FP8_QUANTIZATIONS and not fp8_support:
        return "quantization"
    return None


# Bytes per weight of a quantized linear layer, scales included (see module docstring).
_LINEAR_BYTES: dict[str, float] = {
    "none": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "awq": 0.5 + (2 + 0.5) / 128,
    "gptq": 0.5 + (2 + 0.5) / 128,
    "bitsandbytes": 0.5 + 1 / 64,
    "mxfp4": 2.0,
}
_MXFP4_EXPERT_BYTES = 0.5 + 1 / 32
# Non-torch memory that grows during profiling (cuBLAS/cuDNN workspaces, NCCL once initialised):
# the start-up logs of 2025 builds print 0.03-0.35 GiB whether or not tensor parallelism is on
# (validation/published/vllm_logs.json: vllm#10517, #13061, #13882, #15815); this is their median.
# A December 2024 build printed 1.79 GiB (TP 1) and 3.58 GiB (TP 2) because it still counted the
# CUDA context there (vllm#10511).
NON_TORCH = int(0.3 * GIB)
# With tensor parallelism, vLLM 0.19 prints 2.07-2.21 GiB of non-torch memory per rank (NCCL and
# custom all-reduce buffers) against 0.24-0.27 GiB on one GPU (v0.19.0 start-up logs of
# llm-d-planner#205 in validation/published/vllm_logs.json); December 2024 builds printed 3.58 GiB
# (vllm#10511) and V0 builds of early 2025 only 0.25-0.30 GiB (vllm#13061, #15815). The current
# release is the one modelled.
NON_TORCH_TENSOR_PARALLEL = int(2.1 * GIB)
# CUDA graph capture after the KV cache is allocated (outside the budget in V1 up to 0.10).
CUDA_GRAPHS_TYPICAL = int(0.5 * GIB)
# Bytes per sampled logit in the dummy sampler run: the f32 logits, their softmax and sorted copy.
SAMPLER_BYTES_PER_LOGIT = 12


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VllmOptions(_Frozen):
    """``vllm serve`` options; ``None`` takes vLLM's default for the GPU and model."""

    gpu_memory_bytes: int = Field(gt=0, description="Total memory CUDA reports for one GPU.")
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=1, le=10_000_000)
    max_num_seqs: int | None = Field(default=None, ge=1, le=100_000)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    kv_cache_dtype: KvCacheDtype = "auto"
    quantization: Quantization = "none"
    enforce_eager: bool = False
    block_size: int = Field(default=16, ge=1, le=1024)
    tensor_parallel: int = Field(default=1, ge=1, le=1024)
    checkpoint_bytes: int | None = Field(
        default=None,
        ge=0,
        description="What the checkpoint's tensors occupy as stored, when vLLM loads them in "
        "their own format: the weights are then these bytes, not the format's estimate.",
    )


class VllmResult(_Frozen):
    # Read back from its own JSON (saved results, API responses), computed fields included.
    model_config = ConfigDict(frozen=True, extra="ignore")

    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    budget: int = Field(description="total × gpu_memory_utilization, per GPU.")
    weights: int
    activation_peak: int
    non_torch: int
    cuda_graphs: int
    kv_cache: int
    kv_cache_tokens: int
    num_gpu_blocks: int
    kv_bytes_per_token: int
    blocks_per_request: int = Field(description="Blocks one max_model_len request needs.")
    max_concurrency: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fits(self) -> bool:
        """vLLM starts only if one ``max_model_len`` request fits in the pool."""
        return self.kv_cache > 0 and self.num_gpu_blocks >= self.blocks_per_request


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(value: int, multiple: int) -> int:
    return _cdiv(value, multiple) * multiple


def non_torch_bytes(tensor_parallel: int) -> int:
    """Non-torch memory the profile run sees grow on one GPU: cuBLAS workspaces, and with tensor
    parallelism the NCCL and custom all-reduce buffers (see ``NON_TORCH_TENSOR_PARALLEL``)."""
    return NON_TORCH_TENSOR_PARALLEL if tensor_parallel > 1 else NON_TORCH


def resolved_defaults(arch: Architecture, options: VllmOptions) -> tuple[int, int, int]:
    """(max_model_len, max_num_seqs, max_num_batched_tokens) as vLLM resolves them."""
    big = options.gpu_memory_bytes >= 70 * GIB
    seqs = options.max_num_seqs or (1024 if big else 256)
    tokens = options.max_num_batched_tokens or (8192 if big else 2048)
    length = options.max_model_len or arch.max_position_embeddings or 4096
    return length, seqs, tokens


def _checkpoint_quantization(arch: Architecture, options: VllmOptions) -> str:
    return options.quantization


def weights_bytes(arch: Architecture, options: VllmOptions) -> int:
    """Weights on one GPU: sharded linears and embeddings (vocabulary padded to 64) over TP ranks,
    replicated norms and biases, and the rotary cos/sin cache in the model dtype. MXFP4 experts
    are sized as the Marlin MoE kernel allocates them (hidden size padded to 256, each rank's
    intermediate size to 128; see the module docstring). With ``checkpoint_bytes`` the linears,
    embeddings and their scales are the checkpoint's stored bytes instead of the format's estimate
    (vLLM reads the stored tensors as they are when the quantization is the checkpoint's own)."""
    tp = options.tensor_parallel
    quant = _checkpoint_quantization(arch, options)
    vocab = _cdiv(arch.vocab_size, 64) * 64
    embed = vocab * arch.hidden_size * 2
    head = 0 if arch.tie_word_embeddings else vocab * arch.hidden_size * 2
    linear = arch.linear_params
    padded_experts_per_rank = 0.0
    experts = 0
    if quant == "mxfp4" and arch.is_moe:
        matrices = 3 if arch.mlp_gated else 2
        experts = (
            arch.num_experts
            * matrices
            * arch.hidden_size
            * arch.moe_intermediate_size
            * arch.moe_layer_count
        )
        padded_experts_per_rank = (
            arch.num_experts
            * matrices
            * _round_up(arch.hidden_size, 256)
            * _round_up(_cdiv(arch.moe_intermediate_size, tp), 128)
            * arch.moe_layer_count
            * _MXFP4_EXPERT_BYTES
        )
        linear_bytes = (linear - experts) * 2.0
    else:
        linear_bytes = linear * _LINEAR_BYTES[quant]
    rest = arch.params_total - linear - arch.embedding_params - arch.lm_head_params
    rope = (arch.max_position_embeddings or 0) * (arch.qk_rope_head_dim or arch.head_dim) * 2
    replicated = max(rest, 0) * 2
    if options.checkpoint_bytes is not None:
        # The stored tensors, split like the estimate they replace (norms and biases on every
        # rank), plus what vLLM adds at load: the vocabulary padding, the padding of MXFP4
        # experts for the MoE kernel, and the rotary cache.
        rows = 1 if arch.tie_word_embeddings else 2
        vocab_padding = (vocab - arch.vocab_size) * arch.hidden_size * 2 * rows
        expert_padding = 0.0
        if padded_experts_per_rank:
            expert_padding = padded_experts_per_rank - experts * _MXFP4_EXPERT_BYTES / tp
        stored_sharded = max(options.checkpoint_bytes - replicated, 0)
        return int((stored_sharded + vocab_padding) / tp + expert_padding + replicated + rope)
    sharded = (embed + head + linear_bytes) / tp + padded_experts_per_rank
    return int(sharded + replicated + rope)


def activation_peak_bytes(arch: Architecture, tokens: int, seqs: int, tp: int) -> int:
    """Torch peak increase of the profile run: the larger of the forward pass at ``tokens`` (bf16
    gate/up and activated intermediate, four hidden-wide tensors) and the sampler's logits
    (``min(seqs, tokens) × vocab`` f32 and their sorted copies)."""
    if arch.is_moe:
        inter = arch.experts_per_token * arch.moe_intermediate_size
    else:
        inter = arch.intermediate_size
    forward = tokens * (3 * inter // tp + 4 * arch.hidden_size) * 2
    reqs = min(seqs, tokens)
    sampler = reqs * arch.vocab_size * SAMPLER_BYTES_PER_LOGIT + tokens * arch.hidden_size * 2
    return int(max(forward, sampler))


# FlashMLA's sparse kernels store an FP8 latent as "fp8_ds_mla": 512 FP8 values, 4 FP32 scales and
# the 64 rope values in BF16, 656 bytes a token (vllm/v1/attention/backends/mla/flashmla_sparse.py
# get_kv_cache_shape; FlashMLA README).
FP8_DS_MLA_BYTES = 656
# The lightning indexer's key cache: FP8 keys plus one FP32 scale per 128 of them, as uint8
# (vllm/model_executor/models/deepseek_v2.py DeepseekV32IndexerCache; SGLang's NSATokenToKVPool
# stores the same ``index_head_dim + index_head_dim // 128 · 4`` bytes).
INDEXER_QUANT_BLOCK = 128


def indexer_bytes_per_token(arch: Architecture) -> int:
    """The indexer keys of one token over the layers that run an indexer (DeepSeek Sparse
    Attention: DeepSeek-V3.2, GLM-5)."""
    dim = arch.indexer_head_dim or 0
    return len(arch.indexer_layers) * (dim + dim // INDEXER_QUANT_BLOCK * 4)


def kv_bytes_per_token(arch: Architecture, options: VllmOptions) -> int:
    """One token of KV over all layers on one GPU: K and V of ``kv_heads / tp`` heads (at least one)
    per layer, in each layer's own shapes; for MLA the latent ``kv_lora_rank + qk_rope_head_dim``
    (one tensor, as FlashMLA caches it, not split by TP), 656 bytes under the sparse kernels'
    FP8 layout; plus the indexer keys of a sparse-attention model."""
    dtype = 2 if options.kv_cache_dtype == "auto" else 1
    if arch.attention_kind == "mla":
        if arch.indexer_layers and dtype == 1:
            per_layer = FP8_DS_MLA_BYTES
        else:
            per_layer = ((arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0)) * dtype
        return per_layer * arch.num_layers + indexer_bytes_per_token(arch)
    if arch.kv_layer_shapes:
        total = 0
        for heads, k_dim, v_dim in arch.kv_layer_shapes:
            total += max(1, heads // options.tensor_parallel) * (k_dim + v_dim) * dtype
        return total
    heads = max(1, arch.num_kv_heads // options.tensor_parallel)
    return heads * (arch.head_dim + arch.v_head_dim) * dtype * arch.num_layers


def _groups(arch: Architecture) -> tuple[int, int, int]:
    """(layers per group, full-attention groups, sliding groups) of vLLM's hybrid allocator."""
    sliding = arch.sliding_layer_count if arch.sliding_window else 0
    full = arch.num_layers - sliding
    if not sliding or not full:
        return arch.num_layers, 1, 0
    size = min(full, sliding)
    return size, _cdiv(full, size), _cdiv(sliding, size)


def estimate_vllm(arch: Architecture, options: VllmOptions) -> VllmResult:
    """vLLM's start-up accounting for ``arch`` on one GPU (per rank under tensor parallelism)."""
    length, seqs, tokens = resolved_defaults(arch, options)
    tp = options.tensor_parallel
    budget = int(options.gpu_memory_bytes * options.gpu_memory_utilization)
    weights = weights_bytes(arch, options)
    activation = activation_peak_bytes(arch, tokens, seqs, tp)
    non_torch = non_torch_bytes(tp)
    kv = max(budget - weights - activation - non_torch, 0)
    per_token = kv_bytes_per_token(arch, options)
    per_layer_page = per_token // arch.num_layers * options.block_size
    group_size, full_groups, swa_groups = _groups(arch)
    blocks = kv // (per_layer_page * group_size)
    kv_tokens = blocks // (full_groups + swa_groups) * options.block_size
    need = full_groups * _cdiv(length, options.block_size)
    if swa_groups and arch.sliding_window:
        window = min(length, arch.sliding_window - 1 + tokens)
        need += swa_groups * _cdiv(window, options.block_size)
    concurrency = blocks / need if need else 0.0
    return VllmResult(
        max_model_len=length,
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        budget=budget,
        weights=weights,
        activation_peak=activation,
        non_torch=non_torch,
        cuda_graphs=0 if options.enforce_eager else CUDA_GRAPHS_TYPICAL,
        kv_cache=kv,
        kv_cache_tokens=kv_tokens,
        num_gpu_blocks=blocks,
        kv_bytes_per_token=per_token,
        blocks_per_request=need,
        max_concurrency=round(concurrency, 2),
    )


def concurrency_at(arch: Architecture, options: VllmOptions, max_model_len: int) -> float:
    """Concurrent requests of ``max_model_len`` tokens the pool holds (``max_model_len`` does not
    change the pool in V1, only what one request needs)."""
    trial = options.model_copy(update={"max_model_len": max_model_len})
    return estimate_vllm(arch, trial).max_concurrency


def longest_max_model_len(arch: Architecture, options: VllmOptions) -> int:
    """The longest ``max_model_len`` that starts: one request must fit in the pool."""
    result = estimate_vllm(arch, options.model_copy(update={"max_model_len": 1}))
    if not result.kv_cache:
        return 0
    low, high = 1, max(result.kv_cache_tokens, 1)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_vllm(arch, options.model_copy(update={"max_model_len": mid})).fits:
            low = mid
        else:
            high = mid - 1
    return low

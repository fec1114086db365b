"""Activation memory: what autograd keeps for backward, and what a forward pass holds transiently.

The method is Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models" (arXiv:2205.05198) §4.1: count, per layer, every tensor that the backward pass needs.
Their closed form (``sbh(34 + 5as/h)``) assumes GPT-3's layer with fp16 activations, dropout and
no fused attention; here the same inventory is taken op by op for the layer that Hugging Face
``transformers`` actually runs (``modeling_llama.py`` and its relatives), with PyTorch's
autograd rule that an op saves an input only when the gradient of another input that requires
grad needs it (``tools/autograd/derivatives.yaml``). That rule is why a frozen linear (LoRA)
saves no input, and why an RMSNorm with a frozen weight keeps only its fp32 upcast.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.architecture import Architecture
from calculator.estimator.parallelism import Plan

FP32 = 4.0
MASK = 1.0  # dropout masks are bool tensors


@dataclass(frozen=True)
class Setting:
    """What shapes a layer's activations."""

    batch: int
    seq: int
    act_bytes: float
    """Bytes per element of linear outputs (the compute dtype)."""
    residual_bytes: float
    """Bytes per element of the residual stream (fp32 under autocast of an fp32 model)."""
    autocast: bool
    attention: str
    training: bool
    frozen_base: bool
    plan: Plan
    lora_targets: frozenset[str] = frozenset()
    lora_rank: int = 0
    sequence_parallel: bool = False
    """Megatron sequence parallelism: hidden-wide tensors split ``tp`` ways too."""
    selective_recompute: bool = False
    """Korthikanti et al. 2022 §4.2: the attention core is recomputed, its scores not kept."""
    adapter_bytes: float = FP32
    """Bytes per element of LoRA adapters (fp32 under PEFT's default autocast_adapter_dtype)."""
    quantized_base: bool = False
    """Frozen base linears are bitsandbytes 4-bit layers, whose ``MatMul4Bit`` saves its input
    whenever the input requires grad (``if any(ctx.needs_input_grad[:2]): ctx.tensors = (A, B)``,
    bitsandbytes/autograd/_functions.py), unlike a frozen ``nn.Linear``."""
    fused_layer_kernels: bool = False
    """Unsloth's Triton kernels: RMSNorm saves its input and a per-row rstd
    (``Fast_RMS_Layernorm``: ``save_for_backward(X, W, r)``); the LoRA QKV, O and MLP functions
    keep each block's input once and the MLP only ``e`` and ``g`` (``LoRA_MLP``:
    ``save_for_backward(..., X, e, g)``), recomputing the adapters' intermediates
    (unsloth/kernels/rms_layernorm.py, fast_lora.py)."""
    fused_gelu: bool = False
    """The tanh GELU runs as one op (``F.gelu(approximate='tanh')``) instead of transformers'
    Python ``gelu_new``, so it keeps only its input."""

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def hidden_split(self) -> int:
        """How many ways hidden-wide tensors (norms, residual, linear inputs) are split."""
        return self.plan.tp if self.sequence_parallel else 1


def _norm_saved(arch: Architecture, s: Setting, *, trainable: bool) -> float:
    """Bytes one RMSNorm/LayerNorm keeps per hidden element (output excluded).

    HF's Llama RMSNorm upcasts to fp32 (saved for the variance), multiplies by rsqrt, casts back
    and multiplies by the weight (which saves the normalised input when the weight trains).
    Gemma's and OLMo 2's variants multiply in fp32, so they keep a second fp32 tensor; so does
    Cohere's mean-centred ``CohereLayerNorm`` (modeling_cohere.py / modeling_cohere2.py, 5.24.0),
    which computes ``hidden_states - mean`` twice, for the variance and for the normalisation.
    LayerNorm (``native_layer_norm``) keeps its input plus per-row mean and rstd.
    """
    if arch.norm_kind == "layer":
        return s.residual_bytes
    if s.fused_layer_kernels:
        return s.residual_bytes
    upcast = FP32
    if arch.model_type in {"cohere", "cohere2"}:
        return 2 * FP32 + (FP32 if trainable else 0.0)
    if fp32_weighted_norm(arch):
        # The weight multiplies in fp32: its fp32 input is kept only when the weight trains.
        return upcast + (FP32 if trainable else 0.0)
    return upcast + (s.residual_bytes if trainable else 0.0)


def fp32_weighted_norm(arch: Architecture) -> bool:
    """RMSNorms whose weight multiplies the fp32 normalised input (Gemma's ``1 + weight``,
    ``Olmo2RMSNorm``/``Olmo3RMSNorm``: ``(self.weight * hidden_states).to(input_dtype)``)."""
    return arch.norm_kind == "rms_gemma" or arch.model_type in {"olmo2", "olmo3"}


def _linear_input_saved(width: int, consumers: int, s: Setting, *, trainable: bool) -> float:
    """A linear keeps its input only when its weight trains; autocast keeps one cast per consumer."""
    if s.fused_layer_kernels:
        return s.act_bytes * width
    if not trainable:
        return 0.0
    if s.autocast:
        return consumers * s.act_bytes * width
    return s.act_bytes * width


def _lora_saved(width_in: float, s: Setting, modules: int) -> float:
    """PEFT casts the input to the adapter's dtype (fp32 by default) and keeps it, plus lora_A's
    output for lora_B; adapters in the compute dtype keep the input they share with the base."""
    if s.fused_layer_kernels:
        return 0.0
    if s.adapter_bytes == s.act_bytes:
        # No cast: lora_A saves the same tensor the base linear received (counted once, here).
        return modules * s.act_bytes * s.lora_rank + (s.act_bytes * width_in if modules else 0.0)
    return modules * (s.adapter_bytes * width_in + s.adapter_bytes * s.lora_rank)


def _adapted(s: Setting, *names: str) -> int:
    return sum(1 for name in names if name in s.lora_targets)


def layer_samples(arch: Architecture) -> list[int]:
    """One layer of each kind (dense, MoE): layers of a kind are identical."""
    return [index for index, _count in arch.layer_kinds]


def attention_that_runs(arch: Architecture, requested: str) -> str:
    """The attention transformers runs for a requested one.

    gpt-oss has no SDPA path in transformers 5.24.0 (``GptOssPreTrainedModel._supports_sdpa =
    False``: its attention sinks need a kernel that takes them, modeling_gpt_oss.py), and a
    request for SDPA builds the model with eager attention, so "flash" runs eager there.
    """
    if arch.model_type == "gpt_oss":
        return "eager"
    return requested


def eager_masks(arch: Architecture) -> int:
    """Additive (b, 1, s, s) masks eager attention holds: one per attention kind, since
    transformers builds the full causal and the sliding-window mask separately when a model
    has both kinds of layers (``create_causal_mask`` and ``create_sliding_window_causal_mask``,
    masking_utils.py)."""
    return 2 if 0 < arch.sliding_layer_count < arch.num_layers else 1


def sliding_mask_applies(arch: Architecture, s: Setting) -> bool:
    """Whether SDPA runs with an explicit mask: a sliding window shorter than the sequence."""
    return (
        s.attention == "flash"
        and bool(arch.sliding_layer_count)
        and s.seq > (arch.sliding_window or s.seq)
    )


def materialises_scores(arch: Architecture, s: Setting) -> bool:
    """Whether attention holds the (batch, heads, seq, seq) score matrix.

    Eager attention always does. Falcon's multi-query layout passes a single K/V head to SDPA
    without the grouped-query flag and with an explicit mask (modeling_falcon.py), which only
    PyTorch's math kernel accepts, so its "SDPA" path materialises the scores too.
    """
    if s.attention == "eager":
        return True
    return arch.model_type == "falcon" and arch.num_kv_heads < arch.num_attention_heads


def training_layer_bytes(arch: Architecture, s: Setting, index: int) -> float:
    """Bytes autograd keeps for one decoder layer in a training step (per GPU)."""
    tokens = s.tokens
    h = arch.hidden_size
    p = s.act_bytes
    trainable = not s.frozen_base
    heads = s.plan.heads_per_gpu(arch.num_attention_heads)
    kv_heads = s.plan.heads_per_gpu(arch.num_kv_heads)
    q_width = heads * arch.head_dim
    kv_width = kv_heads * arch.head_dim
    v_width = kv_heads * arch.v_head_dim
    out_width = heads * arch.v_head_dim
    per_token = 0.0

    # Norms before attention/MLP (their outputs feed linears) and after (they feed the residual).
    pre_norms = arch.pre_norms_per_layer
    post_norms = arch.post_norms_per_layer
    hidden_wide = (pre_norms + post_norms) * _norm_saved(arch, s, trainable=trainable) * h

    # Attention inputs: the normalised hidden state kept by q/k/v (one fused linear or three).
    fused_qkv = arch.model_type in {"phi3", "gpt2", "gpt_neox", "falcon"}
    qkv_consumers = 1 if fused_qkv else 3
    if arch.attention_kind == "mla":
        qkv_consumers = 2  # q_a (or q) and kv_a read the normalised input
    keeps_input = trainable or s.quantized_base
    hidden_wide += _linear_input_saved(h, qkv_consumers, s, trainable=keeps_input)
    if arch.attention_kind == "mla":
        # q_a (or q) and kv_a read the normalised input; q_b reads the q latent, kv_b the kv one.
        reads_hidden = _adapted(s, "q_a_proj", "kv_a_proj_with_mqa")
        reads_hidden += 0 if arch.q_lora_rank else _adapted(s, "q_proj")
        hidden_wide += _lora_saved(h, s, reads_hidden)
        if arch.q_lora_rank:
            per_token += _lora_saved(arch.q_lora_rank, s, _adapted(s, "q_proj"))
        per_token += _lora_saved(arch.kv_lora_rank or 0, s, _adapted(s, "k_proj"))
    else:
        hidden_wide += _lora_saved(h, s, _adapted(s, "q_proj", "k_proj", "v_proj", "qkv_proj"))

    if arch.attention_kind == "mla":
        rank = arch.kv_lora_rank or 0
        rope = arch.qk_rope_head_dim or 0
        q_rank = arch.q_lora_rank or 0
        # q_a/kv_a outputs, their norms (fp32 upcast), q_b/kv_b inputs, expanded k and q.
        # Frozen (LoRA): the two latent norms keep only their fp32 upcasts, as the saved
        # tensors of a GLM-4.7-Flash layer show (saved_tensors_hooks, transformers 5.24.0).
        per_token += FP32 * (q_rank + rank)
        if trainable:
            per_token += p * (q_rank + rank + rope) + p * (q_rank + rank)
        # kv_b's output: k_nope is copied into the keys, the values stay a view of it.
        per_token += p * heads * (arch.head_dim - rope + arch.v_head_dim)

    if arch.qk_norm != "none":
        # The fp32 upcast, and the weight multiply's input when the norm's weight trains.
        weighted = (FP32 if fp32_weighted_norm(arch) else p) if trainable else 0.0
        per_token += (FP32 + weighted) * (q_width + kv_width)

    # Fused projections: q, k and v are views of one output, so v keeps the whole storage alive.
    # Phi-3/Phi-4's value reaches SDPA as its own contiguous (b, kv_heads, s, d) tensor: saved
    # tensors of a Phi-4 layer under transformers 5.24.0 (saved_tensors_hooks) hold q, k, v
    # and the output at their own widths, not the qkv_proj storage.
    v_storage = (q_width + 2 * kv_width) if fused_qkv and arch.model_type != "phi3" else v_width
    if arch.attention_kind == "mla":
        v_storage = 0  # a view of kv_b_proj's output, counted with the MLA tensors above
    if s.attention == "flash":
        # SDPA flash / memory-efficient keeps q, k, v, the output and a per-row logsumexp
        # (Dao et al. 2022, FlashAttention, arXiv:2205.14135 §3.1: O(N) extra memory).
        per_token += p * (q_width + kv_width + out_width) + p * v_storage + FP32 * heads
    else:
        # Eager attention repeats K/V to every head, then keeps scores for softmax backward.
        per_token += p * 3 * q_width
        per_token += p * max(0, v_storage - v_width)
    # The attention output, made contiguous for o_proj.
    per_token += _linear_input_saved(out_width, 1, s, trainable=trainable or s.quantized_base)
    per_token += _lora_saved(out_width, s, _adapted(s, "o_proj"))

    if arch.hidden_dropout and s.training:
        hidden_wide += 2 * MASK * h

    # MLP: its hidden-wide input, then the (tensor-parallel) interior.
    hidden_wide += _mlp_input_bytes(arch, s, trainable=keeps_input)
    per_token += _mlp_bytes(arch, s, index, trainable=trainable)
    per_token += hidden_wide / s.hidden_split

    total = per_token * tokens
    if sliding_mask_applies(arch, s):
        # In the sliding layers SDPA gets the window mask and saves the (b, 1, s, s) additive
        # mask it converted for backward (ScaledDotProductFlashAttentionForCpuBackward keeps
        # it; CUDA's memory-efficient backward needs its attn_bias too), and with a mask
        # transformers repeats K/V to every head (sdpa_attention.use_gqa_in_sdpa), so SDPA
        # keeps q-wide K and V: seen in the saved tensors of Mistral and Gemma 3 layers
        # (saved_tensors_hooks, transformers 5.24.0). With one KV head the repeat is a view
        # (repeat_kv's reshape of a size-1 dim), no extra memory. Averaged over the layers
        # (only the sliding ones pay it).
        share = arch.sliding_layer_count / arch.num_layers
        repeated = 2 * p * tokens * (q_width - kv_width) if kv_heads > 1 else 0.0
        total += share * (p * s.batch * s.seq * s.seq + repeated)
    if materialises_scores(arch, s) and not s.selective_recompute:
        total += _eager_scores_saved(arch, s)
    # Tensor parallelism splits the attention and MLP interior (heads and inner widths above);
    # norms and the residual stream stay whole on each GPU (no sequence parallelism).
    return total


def runs_every_expert(arch: Architecture) -> bool:
    """Whether transformers runs every routed expert on every token.

    Llama 4's ``Llama4TextMoe.forward`` (modeling_llama4.py, transformers 5.24.0) repeats the
    hidden states once per expert (``hidden_states.repeat(num_experts, 1)``), scales each copy by
    its router score (zero for the experts a token did not pick) and runs ``Llama4TextExperts``
    as two ``torch.bmm`` over all experts: ``num_experts`` times the tokens, not ``top_k``.
    """
    return arch.model_type in {"llama4_text", "llama4"}


# Routers kept in fp32 whatever the model dtype (``_keep_in_fp32_modules_strict = [...,
# "gate.weight"]`` in modeling_deepseek_v2.py, modeling_deepseek_v3.py, modeling_glm4_moe.py,
# modeling_glm4_moe_lite.py, transformers 5.24.0): their routing weights are fp32.
FP32_ROUTERS = frozenset({"deepseek_v2", "deepseek_v3", "glm4_moe", "glm4_moe_lite"})


def _moe_pair_peak_elements(arch: Architecture, s: Setting) -> float:
    """Elements (in the compute dtype) one (token, expert) pair holds at the peak of
    transformers' ``grouped_mm_experts_forward`` (integrations/moe.py, 5.24.0) under no_grad.

    The tokens gathered per expert (``h``) stay referenced throughout; the up projection's
    ``2·inner`` output lives beside act(gate) and the product (``h + 4·inner``); at the end the
    down projection's output, its product with the routing weights and that product gathered
    back to token order (``weighted_out[inv_perm]``) live together, the last two in fp32 when
    the router is (``FP32_ROUTERS``: type promotion with fp32 weights), i.e. ``6·h`` in bf16
    elements.
    """
    h = arch.hidden_size
    inner = arch.moe_intermediate_size / s.plan.tp
    weighted = (FP32 / s.act_bytes) if arch.model_type in FP32_ROUTERS else 1.0
    return max(h + 4 * inner, 2 * h + 2 * weighted * h)


def _mlp_bytes(arch: Architecture, s: Setting, index: int, *, trainable: bool) -> float:
    """Per-token bytes the MLP (dense or MoE) keeps."""
    p = s.act_bytes
    h = arch.hidden_size
    saved = 0.0
    keeps_input = trainable or s.quantized_base

    def dense(width: int) -> float:
        inner = width / s.plan.tp
        if arch.mlp_gated and s.fused_layer_kernels:
            kept = 2 * p * inner
        elif arch.mlp_gated:
            # act(gate) keeps gate; act*up keeps both factors; down keeps the product.
            kept = 3 * p * inner + (p * inner if keeps_input else 0.0)
        else:
            act_saved = 4 if arch.hidden_act == "gelu_new" and not s.fused_gelu else 1
            kept = act_saved * p * inner + (p * inner if keeps_input else 0.0)
        return kept + _lora_saved(int(inner), s, _adapted(s, "down_proj"))

    if arch.is_moe_layer(index) and runs_every_expert(arch):
        # Per expert copy: the repeated input the router-score multiply keeps, its product (the
        # first bmm's input, when the experts train) and the gated MLP's interior.
        copies = arch.num_experts
        saved += FP32 * 2 * arch.num_experts
        saved += copies * (p * h * (2 if keeps_input else 1) + dense(arch.moe_intermediate_size))
        if arch.shared_expert_intermediate_size:
            saved += dense(arch.shared_expert_intermediate_size)
    elif arch.is_moe_layer(index) and arch.model_type == "gpt_oss":
        # GptOssExperts._apply_gate (modeling_gpt_oss.py, 5.24.0): gate and up are strided
        # views of the 2·inner projection (kept), then clamp(gate), sigmoid(alpha·gate),
        # up + 1 and their product are each kept for backward, and the routing-weight multiply
        # keeps the down projection's output (saved tensors of a gpt-oss layer, probed with
        # saved_tensors_hooks). Training experts add their inputs.
        k = arch.experts_per_token
        inner = arch.moe_intermediate_size / s.plan.tp
        saved += FP32 * 2 * arch.num_experts
        saved += k * p * (6 * inner + h + ((h + inner) if keeps_input else 0.0))
    elif arch.is_moe_layer(index):
        k = arch.experts_per_token
        saved += FP32 * 2 * arch.num_experts  # router logits and fp32 softmax
        saved += k * (p * h + dense(arch.moe_intermediate_size))
        if arch.shared_expert_intermediate_size:
            saved += dense(arch.shared_expert_intermediate_size)
    else:
        saved += dense(arch.intermediate_size)
    return saved


def _mlp_input_bytes(arch: Architecture, s: Setting, *, trainable: bool) -> float:
    """Per-token bytes the MLP's input linears keep of the normalised hidden state."""
    mlp_consumers = 2 if arch.mlp_gated else 1
    saved = _linear_input_saved(arch.hidden_size, mlp_consumers, s, trainable=trainable)
    return saved + _lora_saved(
        arch.hidden_size, s, _adapted(s, "gate_proj", "up_proj", "gate_up_proj")
    )


def _eager_scores_saved(arch: Architecture, s: Setting) -> float:
    """Eager attention keeps the fp32 softmax output and its cast, plus dropout mask and output."""
    heads = s.plan.heads_per_gpu(arch.num_attention_heads)
    scores = s.batch * heads * s.seq * s.seq
    per_score = FP32 + (s.act_bytes if s.act_bytes != FP32 else 0.0)
    if arch.attention_sinks:
        # gpt-oss: the softmax runs in the compute dtype and only its output is saved (the
        # attention weights are a view of it).
        per_score = s.act_bytes
    if arch.attention_dropout and s.training:
        per_score += MASK + s.act_bytes
    return per_score * scores


def checkpointed_layer_bytes(arch: Architecture, s: Setting) -> float:
    """With gradient checkpointing a layer keeps only its input (Chen et al. 2016, arXiv:1604.06174);
    sequence parallelism splits it ``tp`` ways (Korthikanti et al. 2022 §4.2.2, ``2sbh/t``)."""
    return s.residual_bytes * arch.hidden_size * s.tokens / s.hidden_split


def model_level_bytes(arch: Architecture, s: Setting) -> float:
    """Tensors kept once per model: final norm, RoPE cos/sin, masks, embedding dropout."""
    h = arch.hidden_size
    tokens = s.tokens
    trainable = not s.frozen_base
    total = _norm_saved(arch, s, trainable=trainable) * h * tokens if arch.final_norm else 0.0
    total += _linear_input_saved(h, 1, s, trainable=trainable) * tokens
    total /= s.hidden_split
    if not arch.learned_positions:
        total += 2 * s.act_bytes * arch.head_dim * tokens
    if arch.embedding_dropout and s.training:
        total += MASK * h * tokens
    if s.attention == "eager":
        total += eager_masks(arch) * s.act_bytes * s.batch * s.seq * s.seq  # additive masks
    if sliding_mask_applies(arch, s):
        total += 1.0 * s.seq * s.seq  # the boolean window mask, one plane for the batch
    return total


def inference_layer_peak_bytes(arch: Architecture, s: Setting, index: int) -> float:
    """Most bytes one layer's forward holds at once under ``torch.no_grad`` (KV cache excluded).

    Nothing is saved for backward, so only the live working set counts: the residual stream and
    the normalised input, plus the larger of the attention and MLP working sets.
    """
    tokens = s.tokens
    h = arch.hidden_size
    p = s.act_bytes
    heads = s.plan.heads_per_gpu(arch.num_attention_heads)
    kv_heads = s.plan.heads_per_gpu(arch.num_kv_heads)
    q_width = heads * arch.head_dim
    kv_width = kv_heads * arch.head_dim
    out_width = heads * arch.v_head_dim
    # The layer's input (still referenced by the model's loop), the residual, the normalised
    # input, and the embedding output that the model's forward keeps referencing.
    stream = (s.residual_bytes + 3 * p) * h * tokens
    # Normalisation in fp32: upcast and one fp32 temporary.
    norm = 2 * FP32 * h * tokens
    # Attention: q, k, v, rotated q/k, output and its contiguous copy.
    attention = p * tokens * (3 * q_width + 2 * kv_width + 2 * out_width)
    if materialises_scores(arch, s):
        scores = s.batch * heads * s.seq * s.seq
        if arch.attention_sinks:
            # gpt-oss's eager_attention_forward: the scaled scores, the logits with the sink
            # column concatenated and their max-subtracted copy, all in the compute dtype, the
            # softmax too (``dtype=combined_logits.dtype``), so three score tensors at most.
            attention += 3 * p * scores
        else:
            attention += 8.0 * scores  # scores, fp32 softmax and its cast live together
        attention += p * tokens * 2 * q_width  # repeated K/V
    if arch.is_moe_layer(index) and runs_every_expert(arch):
        # Every expert on every token: the scaled copies of the input, the first bmm's
        # gate/up output, act(gate) and its product with up live together (``runs_every_expert``).
        inner = arch.moe_intermediate_size / s.plan.tp
        mlp = p * tokens * arch.num_experts * (h + 4 * inner)
    elif arch.is_moe_layer(index) and arch.model_type in FP32_ROUTERS:
        k = arch.experts_per_token
        mlp = p * tokens * k * _moe_pair_peak_elements(arch, s)
        mlp += FP32 * tokens * 2 * arch.num_experts
    elif arch.is_moe_layer(index):
        k = arch.experts_per_token
        inner = arch.moe_intermediate_size / s.plan.tp
        mlp = p * tokens * (k * 3 * inner + 2 * k * h) + FP32 * tokens * 2 * arch.num_experts
        if arch.shared_expert_intermediate_size:
            mlp += p * tokens * 3 * arch.shared_expert_intermediate_size / s.plan.tp
    else:
        inner = arch.intermediate_size / s.plan.tp
        # SwiGLU: act(gate), up and their product. A plain MLP: fc1's output and the
        # activation's; GPT-2's python "gelu_new" keeps 0.5·x and two chain temporaries too.
        plain = 4 if arch.hidden_act == "gelu_new" else 2
        gated = 3
        if arch.model_type == "phi3":
            # Phi3MLP runs one gate_up_proj and chunks it: its 2·inner output stays alive
            # beside act(gate) and the product (modeling_phi3.py, transformers 5.24.0).
            gated = 4
        mlp = p * tokens * inner * (gated if arch.mlp_gated else plain)
    mask = 0.0
    if sliding_mask_applies(arch, s):
        # A window shorter than the prompt needs an explicit boolean mask, built once for the
        # whole forward: one (s, s) plane expanded over the batch (masking_utils.sdpa_mask
        # broadcasts a batch-independent mask function, transformers 5.24.0). In the sliding
        # layers SDPA converts it to a (b, 1, s, s) additive mask in the compute dtype, and
        # with a mask transformers repeats K/V to every head instead of using SDPA's
        # grouped-query path (sdpa_attention.use_gqa_in_sdpa): at the call the rotated q, the
        # repeated K/V, that mask and the output are live.
        mask = 1.0 * s.seq * s.seq
        masked = p * tokens * (q_width + out_width + 2 * q_width) + p * s.batch * s.seq * s.seq
        attention = max(attention, masked)
    return stream + mask + max(norm, attention, mlp)


def backward_layer_working_bytes(arch: Architecture, s: Setting, index: int) -> float:
    """Gradient tensors alive while backpropagating one layer: a few MLP-sized buffers."""
    tokens = s.tokens
    p = s.act_bytes
    inner = (
        arch.moe_intermediate_size * arch.experts_per_token
        if arch.is_moe_layer(index)
        else arch.intermediate_size
    ) / s.plan.tp
    return p * tokens * (2 * inner + 2 * arch.hidden_size)

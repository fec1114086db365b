"""KV cache: keys and values kept for every processed token, per layer."""

from __future__ import annotations

from calculator.estimator.architecture import Architecture, RecurrentState
from calculator.estimator.parallelism import Plan


def cached_tokens(arch: Architecture, layer_index: int, seq_len: int) -> int:
    """Tokens whose keys and values a layer holds at the end of a prefill: all of them.

    A sliding-window layer too: transformers' ``DynamicSlidingWindowLayer.update``
    (``cache_utils.py``, transformers 5.24.0) concatenates the prompt's K/V into a full-length
    tensor and keeps ``full[:, :, -sliding_window + 1:, :]``, a *view*, so the whole prompt's
    storage stays allocated until the first decode step replaces it. Only from then on does the
    layer hold the window (Beltagy et al. 2020, Longformer, arXiv:2004.05150, define it);
    ``window_tokens`` gives that figure.
    """
    del arch, layer_index
    return seq_len


def window_tokens(arch: Architecture, layer_index: int, seq_len: int) -> int:
    """Tokens a layer keeps once decoding has started: the window on a sliding-window layer."""
    if arch.layer_types and arch.layer_types[layer_index] == "sliding" and arch.sliding_window:
        return min(seq_len, arch.sliding_window)
    return seq_len


def kv_bytes_per_token(arch: Architecture, *, bytes_per_element: float, plan: Plan) -> float:
    """Bytes one attention layer caches per token.

    ``kv_heads · (head_dim + v_head_dim)`` elements (Kwon et al. 2023, vLLM, arXiv:2309.06180
    §3: "2 (key and value vectors) × hidden × layers × bytes" for multi-head attention); with
    grouped-query attention (Ainslie et al. 2023, arXiv:2305.13245) only ``num_key_value_heads``
    heads are cached, and a GPU under tensor parallelism keeps ``ceil(kv_heads / tp)`` of them.

    MLA caches its latent: transformers 5.24.0's DeepSeek-V2/V3, GLM-4 MoE Lite, MiniCPM3 and
    Kimi attentions call ``cache.update`` on the normalised ``kv_lora_rank`` latent and the
    rotated ``qk_rope_head_dim`` key as one-head tensors ("Cache read / write is performed while
    the latent KV is still compressed", ``modeling_deepseek_v2.py``), and expand them per head
    with ``kv_b_proj`` after reading (DeepSeek-V2, arXiv:2405.04434 §2.1.2).
    """
    if arch.attention_kind == "mla" and arch.kv_lora_rank:
        return (arch.kv_lora_rank + (arch.qk_rope_head_dim or 0)) * bytes_per_element
    kv_heads = plan.heads_per_gpu(arch.num_kv_heads)
    return kv_heads * (arch.head_dim + arch.v_head_dim) * bytes_per_element


def kv_cache_bytes(
    arch: Architecture, *, batch: int, seq_len: int, bytes_per_element: float, plan: Plan
) -> int:
    """``batch · tokens · kv_bytes_per_token`` summed over the layers that keep keys and values.

    Only attention layers hold keys and values: state-space and linear-attention layers of a
    hybrid keep the fixed-size state of ``recurrent_state_bytes`` instead.
    """
    if arch.mixer_kinds or arch.kv_shared_layers:
        layers = [index for index in range(arch.num_layers) if arch.keeps_kv(index)]
    else:
        layers = list(range(arch.num_layers))
    if arch.kv_layer_shapes:
        # Layers of their own shapes (Gemma 4's full-attention layers).
        total = 0
        for index in layers:
            heads, k_dim, v_dim = arch.kv_shape(index)
            width = plan.heads_per_gpu(heads) * (k_dim + v_dim)
            total += cached_tokens(arch, index, seq_len) * width
        return int(batch * total * bytes_per_element)
    per_token = kv_bytes_per_token(arch, bytes_per_element=bytes_per_element, plan=plan)
    tokens = sum(cached_tokens(arch, index, seq_len) for index in layers)
    return int(batch * tokens * per_token)


def recurrent_layer_bytes(
    arch: Architecture, state: RecurrentState, *, batch: int, model_bytes: float, plan: Plan
) -> int:
    """One non-attention layer's cache for ``batch`` sequences, independent of their length.

    transformers' ``LinearAttentionLayer`` (``cache_utils.py``) keeps a convolution state of
    ``channels × kernel`` elements in the model dtype and the recurrent state the mixer returns:
    fp32 for Mamba's selective scan (Gu & Dao 2023, arXiv:2312.00752 §3.3), Mamba-2's SSD
    (arXiv:2405.21060) and Gated DeltaNet (arXiv:2412.06464) in their torch paths. Under tensor
    parallelism the heads, hence the state, split ``tp`` ways.
    """
    state_bytes = 4.0 if state.state_fp32 else model_bytes
    per_sequence = state.conv_elements * model_bytes + state.state_elements * state_bytes
    return int(batch * per_sequence / plan.tp)


def recurrent_state_bytes(arch: Architecture, *, batch: int, model_bytes: float, plan: Plan) -> int:
    """Fixed-size state of every non-attention layer (and of Falcon-H1's parallel mixers)."""
    if not (arch.mixer_kinds or arch.parallel_recurrent):
        return 0
    total = 0
    for index in range(arch.num_layers):
        kind = arch.mixer_kind(index)
        if kind not in {"attention", "none"}:
            state = arch.recurrent_state(kind)
            total += recurrent_layer_bytes(
                arch, state, batch=batch, model_bytes=model_bytes, plan=plan
            )
    if arch.parallel_recurrent is not None:
        total += arch.num_layers * recurrent_layer_bytes(
            arch, arch.parallel_recurrent, batch=batch, model_bytes=model_bytes, plan=plan
        )
    return total


def mla_latent_kv_bytes(
    arch: Architecture, *, batch: int, seq_len: int, bytes_per_element: float
) -> int:
    """What vLLM/SGLang cache for MLA: ``kv_lora_rank + qk_rope_head_dim`` per token per layer
    (DeepSeek-V2 paper, arXiv:2405.04434 §2.1.2)."""
    per_token = ((arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0)) * bytes_per_element
    return int(batch * seq_len * arch.num_layers * per_token)

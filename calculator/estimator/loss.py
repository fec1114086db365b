"""The language-model loss: what the logits and the cross-entropy hold, per loss implementation."""

from __future__ import annotations

import math
from dataclasses import dataclass

FP32 = 4.0
TORCHTUNE_OUTPUT_CHUNKS = 8
"""torchtune ``CEWithChunkedOutputLoss(num_output_chunks=8)`` (ce_chunked_output_loss.py @ 10ff7cd)."""


@dataclass(frozen=True)
class LossBytes:
    forward: float
    """Held at the end of the forward pass (the loss computed)."""
    backward: float
    """Held when backward starts (the loss's gradient being formed)."""


def full_loss_bytes(
    *, tokens: int, vocab: float, logit_bytes: float, fp32_model: bool, softcap: bool
) -> LossBytes:
    """Logits for every position, upcast to fp32, log-softmax kept for backward.

    transformers ``loss_utils.ForCausalLMLoss`` upcasts the logits (``logits.float()``) and calls
    ``cross_entropy``; ``log_softmax`` saves its fp32 output, and its backward with
    ``nll_loss``'s holds three fp32 logit-sized tensors at once (PyTorch
    ``tools/autograd/derivatives.yaml``). An fp32 model's logits need no upcast copy.
    """
    elements = tokens * vocab
    forward = elements * ((FP32 + FP32) if fp32_model else (logit_bytes + FP32 + FP32))
    backward = elements * 3 * FP32
    if softcap:
        forward += 2 * elements * logit_bytes
        backward += elements * logit_bytes
    return LossBytes(forward=forward, backward=backward)


def chunked_loss_bytes(
    *, tokens: int, vocab: float, logit_bytes: float, chunks: int = TORCHTUNE_OUTPUT_CHUNKS
) -> LossBytes:
    """The LM head runs per chunk of positions and each chunk is upcast and reduced on its own.

    torchtune's ``CEWithChunkedOutputLoss``: the chunks' logits (compute dtype) all exist when the
    loss starts, each chunk's fp32 copy lives only while its cross-entropy runs, and every chunk's
    fp32 log-softmax stays saved for backward; backward then works one chunk at a time (three
    fp32 chunk-sized tensors and the chunk's gradient in the compute dtype).
    """
    elements = tokens * vocab
    chunk = math.ceil(tokens / chunks) * vocab
    upcast = FP32 if logit_bytes != FP32 else 0.0
    forward = elements * (logit_bytes + FP32) + chunk * upcast
    backward = elements * FP32 + chunk * (3 * FP32 + logit_bytes)
    return LossBytes(forward=forward, backward=backward)


def fused_linear_loss_bytes(
    *,
    tokens: int,
    vocab: float,
    hidden: int,
    act_bytes: float,
    head_params_local: float,
    head_trainable: bool,
    param_bytes: float,
) -> LossBytes:
    """The LM head fused into the loss: no full logits ever exist.

    Liger-Kernel's ``LigerFusedLinearCrossEntropyFunction`` (src/liger_kernel/ops/
    fused_linear_cross_entropy.py) computes in forward, chunk by chunk, the logits, the loss and
    their gradient (in place), accumulating the gradient of the hidden states (tokens × hidden)
    and, when the head trains, of its weight. Chunks hold ``tokens / ceil(vocab / hidden)``
    positions rounded up to a power of two, so a chunk's logits are about one hidden-state
    tensor.
    """
    inc = max(1, math.ceil(vocab / hidden))
    chunk_tokens = 2 ** math.ceil(math.log2(max(1, math.ceil(tokens / inc))))
    chunk = min(tokens, chunk_tokens) * vocab * (act_bytes + FP32)
    grad_input = tokens * hidden * act_bytes
    grad_weight = head_params_local * param_bytes if head_trainable else 0.0
    return LossBytes(forward=grad_input + grad_weight + chunk, backward=grad_input + grad_weight)

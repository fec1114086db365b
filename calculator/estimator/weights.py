"""Model weights: what the parameters occupy at a given precision, and quantization metadata."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.architecture import Architecture
from calculator.estimator.parallelism import Plan
from calculator.estimator.precision import WEIGHT_FORMATS


@dataclass(frozen=True)
class WeightBytes:
    data: int
    quantization_overhead: int


def weight_bytes(
    arch: Architecture,
    *,
    weight_format: str,
    other_bytes: float,
    plan: Plan,
    stored_bytes: int | None = None,
) -> WeightBytes:
    """Parameters × bytes per element, per GPU.

    Quantized formats pack only the decoder's linear layers (and MoE experts); embeddings, the
    LM head, norms and biases stay at ``other_bytes`` per element, as bitsandbytes
    (``llm_int8_skip_modules`` keeps ``lm_head``), AutoAWQ and GPTQ do. Their group scales and
    zero points are reported separately as quantization overhead. Tensor parallelism splits the
    linears, the embedding and the LM head ``tp`` ways (Megatron-LM §3); ZeRO-3 shards them
    all ``dp`` ways.

    ``stored_bytes``, a pre-quantized checkpoint's own size as stored (every tensor with its
    scales and zero points, layers left unquantized included), replaces the estimate: it is split
    the same way, its norms replicated, and has no separate overhead.
    """
    fmt = WEIGHT_FORMATS[weight_format]
    total = arch.params_total
    # A custom model's stated total can be below what its (guessed) shape implies.
    linear = min(arch.linear_params, total)
    other = total - linear
    split = plan.tp * plan.parameter_shards
    norms = min(
        other,
        arch.num_layers * (arch.pre_norms_per_layer + arch.post_norms_per_layer) * arch.hidden_size,
    )
    if stored_bytes is not None:
        replicated = norms * other_bytes
        sharded = max(stored_bytes - replicated, 0)
        data = sharded / split + replicated / plan.parameter_shards
        return WeightBytes(data=int(data), quantization_overhead=0)
    # Norms are replicated under tensor parallelism; embeddings, LM head and biases are split.
    other_split = (other - norms) / split + norms / plan.parameter_shards
    data = linear * fmt.data_bytes / split + other_split * other_bytes
    overhead = linear * fmt.overhead_bytes / split
    return WeightBytes(data=int(data), quantization_overhead=int(overhead))

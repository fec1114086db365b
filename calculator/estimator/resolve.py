"""The architecture a request's model describes: a config.json read by its family's reader, or
a custom model's size and shape fields filled in."""

from __future__ import annotations

import math

from calculator.estimator.architecture import Architecture, ConfigError
from calculator.estimator.schemas import ConfigModel, CustomModel


def resolve_architecture(model: ConfigModel | CustomModel) -> Architecture:
    """The architecture a request describes (raises ``ConfigError`` naming a bad field)."""
    cached = model._architecture
    if isinstance(cached, Architecture):
        return cached
    if isinstance(model, ConfigModel):
        arch = Architecture.from_hf_config(model.config)
    else:
        arch = architecture_from_custom(model)
    model._architecture = arch
    return arch


def architecture_from_custom(model: CustomModel) -> Architecture:
    """A Llama-shaped architecture for a model given by size and whatever shape fields are known.

    Missing depth and width come from the dense-transformer count ``params ≈ 12 · L · h²``
    (Kaplan et al. 2020, arXiv:2001.08361 §2.1) with Llama 2's aspect ratio ``h / L = 128``
    (Touvron et al. 2023, arXiv:2307.09288, Table 1: 4096/32, 5120/40); the width is a whole
    number of 128-wide heads per KV group and of 256-element blocks, as in published models (and
    as GGUF K-quants need). ``12 · L · h²`` counts full multi-head attention and no embeddings,
    so with grouped KV heads it falls about a sixth short; the MLP width (or, when that is given,
    the depth) is therefore solved from the shape's own tensor count, so that the tensors —
    what llama.cpp and vLLM load — add up to the stated size, to within 256 MLP columns (or one
    layer). The stated size stays the parameter count.
    """
    params = model.params_billion * 1e9 if model.params_billion else None
    layers, hidden = model.num_layers, model.hidden_size
    kv_heads = model.num_kv_heads
    heads = model.num_attention_heads
    step = math.lcm(256, 128 * (kv_heads or 1)) if heads is None else 256
    if layers is None or hidden is None:
        assert params is not None
        if hidden is not None:
            layers = max(1, round(params / (12 * hidden * hidden)))
        elif layers is not None:
            hidden = max(step, round(math.sqrt(params / (12 * layers)) / step) * step)
        else:
            layers = max(1, round((params / (12 * 128 * 128)) ** (1 / 3)))
            hidden = max(step, round(128 * layers / step) * step)
    if heads is None:
        # 128-wide heads, rounded to a multiple of the KV heads when those are given.
        group = kv_heads or 1
        heads = max(group, round(hidden / 128 / group) * group)
    head_dim = model.head_dim or max(1, hidden // heads)
    kv_heads = kv_heads or heads
    if heads % kv_heads:
        raise ConfigError("num_attention_heads must be a multiple of num_kv_heads.", "num_kv_heads")
    experts = model.num_experts or 0

    def shape(intermediate: int, depth: int) -> Architecture:
        return Architecture(
            model_type="custom",
            vocab_size=model.vocab_size or 32_000,
            hidden_size=hidden,
            num_layers=depth,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            intermediate_size=intermediate,
            tie_word_embeddings=model.tie_word_embeddings,
            num_experts=experts,
            experts_per_token=model.experts_per_token or 0,
            moe_intermediate_size=intermediate if experts else 0,
            moe_layers=tuple(range(depth)) if experts else (),
        )

    intermediate = model.intermediate_size
    if intermediate is None:
        intermediate = max(256, round(hidden * 8 / 3 / 256) * 256)
        if params is not None:
            # The count is linear in the MLP width: solve for it in steps of 256 columns.
            low = shape(256, layers).params_total
            per_step = shape(512, layers).params_total - low
            intermediate = 256 * max(1, 1 + round((params - low) / per_step))
    elif params is not None and model.num_layers is None:
        # The count is linear in the depth: solve for it.
        one = shape(intermediate, 1).params_total
        layers = max(1, 1 + round((params - one) / (shape(intermediate, 2).params_total - one)))
    arch = shape(intermediate, layers)
    return arch.model_copy(update={"params_override": int(params)}) if params else arch

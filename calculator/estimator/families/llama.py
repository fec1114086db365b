"""Llama 1/2/3 (``modeling_llama.py``) and every config with the standard field names.

The Llama reader is also the generic one: a config whose ``model_type`` no family module
registers is read with it (and its estimate flagged as approximate).
"""

from __future__ import annotations

from calculator.estimator.architecture import (
    Architecture,
    ConfigError,
    ConfigFields,
    core_fields,
    layer_types_from,
)
from calculator.estimator.families.registry import register


def uses_sliding_window(c: ConfigFields, model_type: str) -> bool:
    if model_type in {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}:
        return c.flag("use_sliding_window", False)
    return model_type in {"mistral", "mixtral"}


@register("llama", "yi")
def read_llama_like(c: ConfigFields) -> Architecture:
    """Llama 1/2/3, Yi, and any config with the standard field names."""
    fields = core_fields(c)
    model_type = fields["model_type"]
    if not c.has("intermediate_size"):
        raise ConfigError("Config is missing the field 'intermediate_size'.", "intermediate_size")
    fields["intermediate_size"] = c.positive("intermediate_size")
    fields["qkv_bias"] = c.flag("attention_bias", model_type in {"qwen2", "qwen2_moe"})
    fields["o_bias"] = c.flag("attention_bias", False) and model_type not in {"qwen2", "qwen2_moe"}
    fields["mlp_bias"] = c.flag("mlp_bias", False)
    layer_types, window = layer_types_from(c, fields["num_layers"])
    if not layer_types and c.has("sliding_window") and uses_sliding_window(c, model_type):
        window = c.integer("sliding_window")
        layer_types = ("sliding",) * fields["num_layers"]
    fields["layer_types"] = layer_types
    fields["sliding_window"] = window
    return Architecture(**fields)


@register("internlm3")
def read_internlm3(c: ConfigFields) -> Architecture:
    """InternLM3 (``configuration_internlm3.py``): built as ``LlamaForCausalLM``; the published
    ``qkv_bias`` / ``bias`` fields are aliases of ``attention_bias`` / ``mlp_bias``."""
    aliases = {"attention_bias": c.raw.get("qkv_bias"), "mlp_bias": c.raw.get("bias")}
    raw = {**c.raw, **{k: v for k, v in aliases.items() if v is not None and k not in c.raw}}
    return read_llama_like(ConfigFields(raw))


@register("__generic__")
def read_generic(c: ConfigFields) -> Architecture:
    """A config no family module knows: Llama's layout, plus routed (and shared) experts when
    the config names them under one of the common spellings. Estimates from it are flagged as
    approximate (see ``validation/generic_reader_error.py`` for how far off it is elsewhere)."""
    if not c.has("intermediate_size") and c.has("n_inner", "ffn_dim", "ffn_hidden_size"):
        inner = c.positive("n_inner", "ffn_dim", "ffn_hidden_size")
        c = ConfigFields({**c.raw, "intermediate_size": inner})
    arch = read_llama_like(c)
    experts = c.integer(
        "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", default=0
    )
    if experts <= 1:
        return arch
    moe_inter = c.positive("moe_intermediate_size", default=arch.intermediate_size)
    shared = c.integer(
        "n_shared_experts", "num_shared_experts", "moe_num_shared_experts", default=0
    )
    shared_size = c.integer("shared_expert_intermediate_size", default=moe_inter * shared)
    first_dense = c.integer("first_k_dense_replace", default=0)
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": c.positive("num_experts_per_tok", "moe_k", "moe_topk", default=1),
            "moe_intermediate_size": moe_inter,
            "num_shared_experts": 1 if shared_size and not shared else shared,
            "shared_expert_intermediate_size": shared_size,
            "moe_layers": tuple(range(first_dense, arch.num_layers)),
        }
    )


@register("__multimodal__")
def read_unknown_multimodal(c: ConfigFields) -> Architecture:
    """A multimodal config no family module knows: its ``text_config`` is read (by its own
    family, else generically); the vision tower is not counted, and the result says so."""
    text = dict(c.raw["text_config"])
    text.setdefault("model_type", f"{c.text('model_type', '')}_text")
    for key in ("vocab_size", "tie_word_embeddings"):
        if key not in text and key in c.raw:
            text[key] = c.raw[key]
    arch = Architecture.from_hf_config(text)
    return arch.model_copy(update={"model_type": c.text("model_type", "custom")})

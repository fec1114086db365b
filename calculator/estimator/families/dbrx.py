"""DBRX (``modeling_dbrx.py``, ``configuration_dbrx.py``, transformers 5.24)."""

from __future__ import annotations

from typing import Any

from calculator.estimator.architecture import Architecture, ConfigError, ConfigFields
from calculator.estimator.families.llama import read_llama_like
from calculator.estimator.families.registry import register


def _block(c: ConfigFields, name: str) -> dict[str, Any]:
    block = c.raw.get(name)
    if not isinstance(block, dict):
        raise ConfigError(f"Config is missing the field '{name}'.", name)
    return block


@register("dbrx")
def read_dbrx(c: ConfigFields) -> Architecture:
    """DBRX keeps its shapes under its own names: ``d_model``, ``n_heads``, ``n_layers``, and the
    nested ``attn_config`` (``kv_n_heads``) and ``ffn_config`` (``ffn_hidden_size``,
    ``moe_num_experts``, ``moe_top_k``). ``DbrxAttention`` is one fused bias-free Wqkv (GQA) and
    a bias-free out_proj; its norms are LayerNorms without bias (one weight vector each, as an
    RMSNorm has); every layer is a MoE of gated (w1, v1, w2) experts behind a bias-free router;
    the LM head is untied."""
    attn, ffn = _block(c, "attn_config"), _block(c, "ffn_config")
    inner = ConfigFields(ffn)
    raw = {
        **c.raw,
        "hidden_size": c.positive("d_model"),
        "num_attention_heads": c.positive("n_heads"),
        "num_hidden_layers": c.positive("n_layers"),
        "num_key_value_heads": ConfigFields(attn).positive("kv_n_heads", default=1),
        "intermediate_size": inner.positive("ffn_hidden_size"),
        "max_position_embeddings": c.raw.get("max_seq_len"),
        "attention_bias": False,
        "mlp_bias": False,
    }
    arch = read_llama_like(ConfigFields(raw))
    return arch.model_copy(
        update={
            "num_experts": inner.positive("moe_num_experts"),
            "experts_per_token": inner.positive("moe_top_k"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )

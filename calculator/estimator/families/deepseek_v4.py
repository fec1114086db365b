"""DeepSeek V4 (``modeling_deepseek_v4.py``, ``configuration_deepseek_v4.py``): every layer keeps
a sliding-window attention over one shared 512-wide KV head, with a low-rank query, a grouped
low-rank output projection and per-head sinks; most layers add a KV compressor (CSA: rate 4,
overlapping windows and a lightning indexer; HCA: rate 128); manifold-constrained
hyper-connections (``hc_mult`` residual streams) wrap attention and MoE; every layer is a MoE
(routed experts plus one shared expert, all ``moe_intermediate_size`` wide)."""

from __future__ import annotations

from collections.abc import Mapping

from calculator.estimator.architecture import Architecture, ConfigError, ConfigFields, core_fields
from calculator.estimator.families.registry import register

_RATIO_TYPES = {
    0: "sliding_attention",
    4: "compressed_sparse_attention",
    128: "heavily_compressed_attention",
}
_TYPES = set(_RATIO_TYPES.values())


def _layer_types(c: ConfigFields, layers: int) -> list[str]:
    """``layer_types``, else the legacy ``compress_ratios`` (0 / 4 / 128 per layer), else
    DeepseekV4Config's default: two HCA layers, then CSA and HCA alternating."""
    raw = c.raw.get("layer_types")
    if isinstance(raw, list):
        types = [str(kind) for kind in raw]
    elif isinstance(c.raw.get("compress_ratios"), list):
        ratios = c.raw["compress_ratios"]
        if not all(ratio in _RATIO_TYPES for ratio in ratios):
            raise ConfigError("compress_ratios entries must be 0, 4 or 128.", "compress_ratios")
        types = [_RATIO_TYPES[ratio] for ratio in ratios]
    else:
        types = ["heavily_compressed_attention"] * min(layers, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
            for i in range(max(layers - 2, 0))
        ]
    types = types[:layers]
    if len(types) != layers or set(types) - _TYPES:
        raise ConfigError("layer_types must name one attention kind per layer.", "layer_types")
    return types


def _compress_rates(c: ConfigFields) -> tuple[int, int]:
    """(CSA rate, HCA rate): ``compress_rates``, the legacy ``compress_rate_csa`` /
    ``compress_rate_hca``, else 4 and 128."""
    rates = c.raw.get("compress_rates")
    rates = rates if isinstance(rates, Mapping) else {}
    csa = ConfigFields({"v": rates.get("compressed_sparse_attention")}).positive(
        "v", default=c.positive("compress_rate_csa", default=4)
    )
    hca = ConfigFields({"v": rates.get("heavily_compressed_attention")}).positive(
        "v", default=c.positive("compress_rate_hca", default=128)
    )
    return csa, hca


@register("deepseek_v4")
def read_deepseek_v4(c: ConfigFields) -> Architecture:
    """Attention (``DeepseekV4Attention``): q_a_proj, q_a_norm, q_b_proj, kv_proj to one
    ``head_dim`` head, kv_norm, o_a_proj (``o_groups`` blocks of heads·head_dim/o_groups →
    ``o_lora_rank``), o_b_proj, sinks. Compressors: a position bias (rate × width), kv and gate
    projections and a kv norm, width 2·head_dim for CSA (overlapping windows) and head_dim for
    HCA; CSA's indexer does the same at ``index_head_dim`` plus q_b_proj and a per-head scorer.
    Hyper-connections: per layer two mixers of (2 + n)·n rows over n·hidden, a base and three
    scales; one head mixer of n rows. The MTP layers are not built by transformers.

    Memory: the cache is taken as every layer's sliding window of one KV head; the compressed
    entries (one per ``compress_rate`` tokens) and the indexer keys are not modelled yet."""
    c.require("hidden_size", "num_hidden_layers", "num_attention_heads", "moe_intermediate_size")
    fields = core_fields(c, head_dim_from_hidden=False)
    h: int = fields["hidden_size"]
    layers: int = fields["num_layers"]
    heads: int = fields["num_attention_heads"]
    head_dim = c.positive("head_dim", default=512)
    q_rank = c.positive("q_lora_rank", default=1024)
    o_groups = c.positive("o_groups", default=8)
    o_rank = c.positive("o_lora_rank", default=1024)
    if (heads * head_dim) % o_groups:
        raise ConfigError("num_attention_heads × head_dim must divide into o_groups.", "o_groups")
    attention = (
        h * q_rank
        + q_rank
        + q_rank * heads * head_dim
        + h * head_dim
        + head_dim
        + o_rank * heads * head_dim  # o_groups blocks of (heads·head_dim/o_groups) → o_lora_rank
        + o_groups * o_rank * h
        + heads
    )
    csa_rate, hca_rate = _compress_rates(c)
    index_heads = c.positive("index_n_heads", default=64)
    index_dim = c.positive("index_head_dim", default=128)

    def compressor(rate: int, dim: int, overlap: bool) -> int:
        width = 2 * dim if overlap else dim
        return rate * width + 2 * h * width + dim

    csa = compressor(csa_rate, head_dim, True) + compressor(csa_rate, index_dim, True)
    csa += q_rank * index_heads * index_dim + h * index_heads
    hca = compressor(hca_rate, head_dim, False)
    types = _layer_types(c, layers)
    streams = c.positive("hc_mult", default=4)
    hyper = 2 * ((2 + streams) * streams * streams * h + (2 + streams) * streams + 3)
    extra = sum(
        csa
        if kind == "compressed_sparse_attention"
        else hca
        if kind == "heavily_compressed_attention"
        else 0
        for kind in types
    )
    extra += layers * hyper + streams * streams * h + streams + 1
    moe_inter = c.positive("moe_intermediate_size")
    fields.update(
        num_kv_heads=1,
        head_dim=head_dim,
        v_head_dim=head_dim,
        attention_block_params=attention,
        attention_sinks=True,
        intermediate_size=moe_inter,
        mlp_bias=c.flag("mlp_bias", False),
        layer_types=("sliding",) * layers,
        sliding_window=c.positive("sliding_window", default=128),
        num_experts=c.positive("n_routed_experts", default=256),
        experts_per_token=c.positive("num_experts_per_tok", default=6),
        moe_intermediate_size=moe_inter,
        num_shared_experts=1,
        shared_expert_intermediate_size=moe_inter,
        moe_layers=tuple(range(layers)),
        other_params=extra,
    )
    return Architecture(**fields)

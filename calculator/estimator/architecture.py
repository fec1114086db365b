"""A model's architecture, read from a Hugging Face ``config.json``, and its exact parameter count.

Every family listed in ``FAMILY_READERS`` maps its config fields onto one normalised description
(``Architecture``); parameter counting then follows the module layout that ``transformers``
builds for that family (``modeling_<family>.py``), so the count equals
``sum(p.numel() for p in model.parameters())`` on the meta device. The committed dataset
``tests/estimator/data/transformers_param_counts.json`` checks that claim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NormKind = Literal["rms", "layer", "rms_gemma"]
QkNorm = Literal["none", "per_head", "full"]


class ConfigError(ValueError):
    """A config the estimator cannot understand; the message names the missing or bad field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Architecture(BaseModel):
    """What memory depends on, normalised across families. Sizes are element counts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_type: str = Field(description="The config's model_type (or 'custom').")
    vocab_size: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0, description="Key/value heads (GQA/MQA); MLA: attention heads.")
    head_dim: int = Field(gt=0, description="Query/key head size.")
    v_head_dim: int = Field(gt=0, description="Value head size.")
    attention_kind: Literal["standard", "mla"] = "standard"
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: QkNorm = "none"
    attention_sinks: bool = False
    intermediate_size: int = Field(gt=0)
    mlp_gated: bool = True
    mlp_bias: bool = False
    hidden_act: str = "silu"
    norm_kind: NormKind = "rms"
    pre_norms_per_layer: int = Field(default=2, ge=0, le=4)
    post_norms_per_layer: int = Field(default=0, ge=0, le=4)
    parallel_block: bool = Field(
        default=False, description="Attention and MLP read the same input (GPT-J/NeoX/Falcon)."
    )
    final_norm: bool = True
    learned_positions: int = Field(default=0, ge=0, description="Rows of a learned position table.")
    tie_word_embeddings: bool = False
    lm_head_bias: bool = False
    final_logit_softcapping: float | None = None
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    embedding_dropout: float = 0.0
    num_experts: int = Field(default=0, ge=0)
    experts_per_token: int = Field(default=0, ge=0)
    moe_intermediate_size: int = Field(default=0, ge=0)
    num_shared_experts: int = Field(default=0, ge=0)
    shared_expert_intermediate_size: int = Field(default=0, ge=0)
    shared_expert_gate: bool = False
    router_bias: bool = False
    expert_bias: bool = False
    moe_layers: tuple[int, ...] = Field(default=(), description="Indices of MoE layers.")
    layer_types: tuple[Literal["full", "sliding"], ...] = ()
    sliding_window: int | None = None
    max_position_embeddings: int | None = None
    extra_params: int = Field(
        default=0, ge=0, description="Parameters outside the language model (vision tower)."
    )
    params_override: int | None = Field(
        default=None, description="A stated total for a custom model; overrides the count."
    )

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any]) -> Architecture:
        """Read a published ``config.json`` (see ``FAMILY_READERS`` for the families known)."""
        if not isinstance(config, Mapping):
            raise ConfigError("The config must be a JSON object.")
        if "text_config" in config and isinstance(config["text_config"], Mapping):
            return _read_multimodal(config)
        model_type = str(config.get("model_type") or "")
        reader = FAMILY_READERS.get(model_type, _read_llama_like)
        return reader(_Config(config))

    # --- derived sizes -------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def q_width(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def attn_out_width(self) -> int:
        return self.num_attention_heads * self.v_head_dim

    @property
    def sliding_layer_count(self) -> int:
        return sum(1 for kind in self.layer_types if kind == "sliding")

    def is_moe_layer(self, index: int) -> bool:
        return self.is_moe and index in self.moe_layers

    @property
    def moe_layer_count(self) -> int:
        return len(self.moe_layers) if self.is_moe else 0

    @cached_property
    def layer_kinds(self) -> tuple[tuple[int, int], ...]:
        """(index of a representative layer, how many layers share its structure)."""
        moe = set(self.moe_layers) if self.is_moe else set()
        kinds = []
        dense = [i for i in range(self.num_layers) if i not in moe]
        if dense:
            kinds.append((dense[0], len(dense)))
        if moe:
            kinds.append((min(moe), len(moe)))
        return tuple(kinds)

    # --- parameter counts (exact, per transformers' module layout) ------------------------
    def norm_params(self, width: int) -> int:
        return 2 * width if self.norm_kind == "layer" else width

    def attention_params(self) -> int:
        """One attention block: projections, their biases, q/k norms and sinks."""
        h = self.hidden_size
        heads = self.num_attention_heads
        if self.attention_kind == "mla":
            rope = self.qk_rope_head_dim or 0
            kv_rank = self.kv_lora_rank or 0
            nope = self.head_dim - rope
            if self.q_lora_rank:
                q = (
                    h * self.q_lora_rank
                    + self.q_lora_rank
                    + self.q_lora_rank * heads * self.head_dim
                )
            else:
                q = h * heads * self.head_dim
            kv = h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + self.v_head_dim)
            out = heads * self.v_head_dim * h + (h if self.o_bias else 0)
            return q + kv + out
        q, kv = self.q_width, self.kv_width
        params = h * (q + 2 * kv) + self.attn_out_width * h
        if self.qkv_bias:
            params += q + 2 * kv
        if self.o_bias:
            params += h
        if self.qk_norm == "per_head":
            params += 2 * self.head_dim
        elif self.qk_norm == "full":
            params += q + kv
        if self.attention_sinks:
            params += heads
        return params

    def dense_mlp_params(self, intermediate: int | None = None) -> int:
        h, i = self.hidden_size, intermediate or self.intermediate_size
        matrices = 3 if self.mlp_gated else 2
        params = matrices * h * i
        if self.mlp_bias:
            params += (2 * i if self.mlp_gated else i) + h
        return params

    def moe_params(self) -> int:
        """One MoE block: router, every routed expert, shared experts and their gate."""
        h, e = self.hidden_size, self.num_experts
        params = h * e + (e if self.router_bias else 0)
        expert = (3 if self.mlp_gated else 2) * h * self.moe_intermediate_size
        if self.expert_bias:
            expert += (2 if self.mlp_gated else 1) * self.moe_intermediate_size + h
        params += e * expert
        if self.shared_expert_intermediate_size:
            params += self.dense_mlp_params(self.shared_expert_intermediate_size)
        if self.shared_expert_gate:
            params += h
        return params

    def layer_params(self, index: int) -> int:
        norms = (self.pre_norms_per_layer + self.post_norms_per_layer) * self.norm_params(
            self.hidden_size
        )
        mlp = self.moe_params() if self.is_moe_layer(index) else self.dense_mlp_params()
        return self.attention_params() + mlp + norms

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size + self.learned_positions * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The output projection's own parameters (zero weight when tied to the embedding)."""
        weight = 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size
        return weight + (self.vocab_size if self.lm_head_bias else 0)

    @cached_property
    def params_total(self) -> int:
        if self.params_override is not None:
            return self.params_override
        layers = sum(count * self.layer_params(index) for index, count in self.layer_kinds)
        final = self.norm_params(self.hidden_size) if self.final_norm else 0
        return self.embedding_params + layers + final + self.lm_head_params + self.extra_params

    @property
    def params_active(self) -> int:
        """Parameters one token touches: routed experts count only ``experts_per_token``."""
        if not self.is_moe:
            return self.params_total
        h = self.hidden_size
        expert = (3 if self.mlp_gated else 2) * h * self.moe_intermediate_size
        idle = (self.num_experts - self.experts_per_token) * expert * self.moe_layer_count
        return self.params_total - idle

    @cached_property
    def linear_params(self) -> int:
        """Parameters held in matrices that weight quantization packs (decoder linears, experts)."""
        h = self.hidden_size
        total = 0
        for index, count in self.layer_kinds:
            attention = self.attention_params()
            if self.qkv_bias:
                attention -= self.q_width + 2 * self.kv_width
            if self.o_bias:
                attention -= h
            if self.qk_norm == "per_head":
                attention -= 2 * self.head_dim
            elif self.qk_norm == "full":
                attention -= self.q_width + self.kv_width
            if self.attention_sinks:
                attention -= self.num_attention_heads
            if self.attention_kind == "mla":
                attention -= (self.q_lora_rank or 0) + (self.kv_lora_rank or 0)
            if self.is_moe_layer(index):
                expert = (3 if self.mlp_gated else 2) * h * self.moe_intermediate_size
                mlp = self.num_experts * expert
                if self.shared_expert_intermediate_size:
                    mlp += (3 if self.mlp_gated else 2) * h * self.shared_expert_intermediate_size
            else:
                mlp = (3 if self.mlp_gated else 2) * h * self.intermediate_size
            total += count * (attention + mlp)
        return total

    @cached_property
    def largest_layer_params(self) -> int:
        return max(self.layer_params(index) for index, _count in self.layer_kinds)


# --- reading configs ---------------------------------------------------------------------
class _Config:
    """Typed access to a config dict with clear errors naming the field."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def has(self, *names: str) -> bool:
        return any(self.raw.get(name) is not None for name in names)

    def integer(self, *names: str, default: int | None = None) -> int:
        for name in names:
            value = self.raw.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"Config field '{name}' must be a number, got {value!r}.", name)
            if value != int(value) or value < 0:
                raise ConfigError(
                    f"Config field '{name}' must be a non-negative integer, got {value!r}.", name
                )
            return int(value)
        if default is not None:
            return default
        raise ConfigError(
            f"Config is missing the field '{names[0]}'"
            + (f" (also looked for {', '.join(repr(n) for n in names[1:])})" if names[1:] else "")
            + ".",
            names[0],
        )

    def positive(self, *names: str, default: int | None = None) -> int:
        value = self.integer(*names, default=default)
        if value <= 0:
            raise ConfigError(f"Config field '{names[0]}' must be positive, got {value}.", names[0])
        return value

    def number(self, *names: str, default: float = 0.0) -> float:
        for name in names:
            value = self.raw.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"Config field '{name}' must be a number, got {value!r}.", name)
            return float(value)
        return default

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(f"Config field '{name}' must be true or false, got {value!r}.", name)
        return value

    def text(self, name: str, default: str) -> str:
        value = self.raw.get(name)
        return str(value) if value is not None else default


def _core(c: _Config) -> dict[str, Any]:
    """Fields every decoder-only config carries under the standard names."""
    hidden = c.positive("hidden_size", "n_embd", "d_model")
    heads = c.positive("num_attention_heads", "n_head", "num_heads")
    if hidden % heads and not c.has("head_dim"):
        raise ConfigError(
            f"hidden_size {hidden} is not divisible by num_attention_heads {heads}; "
            "the config needs an explicit 'head_dim'.",
            "head_dim",
        )
    head_dim = c.positive("head_dim", default=hidden // heads)
    kv_heads = c.positive("num_key_value_heads", "n_kv_heads", default=heads)
    if heads % kv_heads:
        raise ConfigError(
            f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}.",
            "num_key_value_heads",
        )
    return {
        "model_type": c.text("model_type", "custom") or "custom",
        "vocab_size": c.positive("vocab_size"),
        "hidden_size": hidden,
        "num_layers": c.positive("num_hidden_layers", "n_layer", "num_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "v_head_dim": head_dim,
        "hidden_act": c.text("hidden_act", c.text("hidden_activation", "silu")),
        "tie_word_embeddings": c.flag("tie_word_embeddings", False),
        "attention_dropout": c.number("attention_dropout", "attn_pdrop"),
        "max_position_embeddings": c.integer("max_position_embeddings", "n_positions", default=0)
        or None,
    }


def _layer_types(
    c: _Config, num_layers: int
) -> tuple[tuple[Literal["full", "sliding"], ...], int | None]:
    """Which layers use a sliding window, from ``layer_types`` or the family's own fields."""
    window = c.raw.get("sliding_window")
    raw_types = c.raw.get("layer_types")
    if isinstance(raw_types, list) and len(raw_types) == num_layers:
        kinds: list[Literal["full", "sliding"]] = [
            "sliding" if "sliding" in str(kind) else "full" for kind in raw_types
        ]
        if "sliding" in kinds and not isinstance(window, int):
            raise ConfigError(
                "layer_types names sliding layers but 'sliding_window' is missing.",
                "sliding_window",
            )
        return tuple(kinds), window if "sliding" in kinds else None
    return (), None


def _read_llama_like(c: _Config) -> Architecture:
    """Llama 1/2/3, Mistral, Qwen2/2.5, Yi, and any config with the standard field names."""
    fields = _core(c)
    model_type = fields["model_type"]
    if not c.has("intermediate_size"):
        raise ConfigError("Config is missing the field 'intermediate_size'.", "intermediate_size")
    fields["intermediate_size"] = c.positive("intermediate_size")
    fields["qkv_bias"] = c.flag("attention_bias", model_type in {"qwen2", "qwen2_moe"})
    fields["o_bias"] = c.flag("attention_bias", False) and model_type not in {"qwen2", "qwen2_moe"}
    fields["mlp_bias"] = c.flag("mlp_bias", False)
    layer_types, window = _layer_types(c, fields["num_layers"])
    if not layer_types and c.has("sliding_window") and _uses_sliding_window(c, model_type):
        window = c.integer("sliding_window")
        layer_types = ("sliding",) * fields["num_layers"]
    fields["layer_types"] = layer_types
    fields["sliding_window"] = window
    return Architecture(**fields)


def _uses_sliding_window(c: _Config, model_type: str) -> bool:
    if model_type in {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}:
        return c.flag("use_sliding_window", False)
    return model_type in {"mistral", "mixtral"}


def _read_qwen3(c: _Config) -> Architecture:
    arch = _read_llama_like(c)
    return arch.model_copy(
        update={
            "qk_norm": "per_head",
            "qkv_bias": c.flag("attention_bias", False),
            "o_bias": c.flag("attention_bias", False),
        }
    )


def _read_olmo2(c: _Config) -> Architecture:
    arch = _read_llama_like(c)
    return arch.model_copy(
        update={"qk_norm": "full", "pre_norms_per_layer": 0, "post_norms_per_layer": 2}
    )


def _read_gemma(c: _Config) -> Architecture:
    """Gemma 1/2/3 (text): tied embeddings, (1 + weight) RMSNorm, explicit head_dim."""
    fields = _core(c)
    fields["intermediate_size"] = c.positive("intermediate_size")
    fields["tie_word_embeddings"] = c.flag("tie_word_embeddings", True)
    fields["hidden_act"] = c.text("hidden_activation", c.text("hidden_act", "gelu_pytorch_tanh"))
    fields["norm_kind"] = "rms_gemma"
    fields["qkv_bias"] = c.flag("attention_bias", False)
    fields["o_bias"] = c.flag("attention_bias", False)
    model_type = fields["model_type"]
    if model_type in {"gemma2", "gemma3_text", "gemma3"}:
        fields["post_norms_per_layer"] = 2
        fields["final_logit_softcapping"] = c.raw.get("final_logit_softcapping")
        layer_types, window = _layer_types(c, fields["num_layers"])
        if not layer_types and c.has("sliding_window"):
            pattern = c.integer(
                "sliding_window_pattern", default=2 if model_type == "gemma2" else 6
            )
            # Gemma 2 alternates sliding (even layers) and global; Gemma 3 puts one global layer
            # after every pattern-1 sliding ones (modeling_gemma2/3 layer_types defaults).
            if model_type == "gemma2":
                layer_types = tuple(
                    "sliding" if not i % 2 else "full" for i in range(fields["num_layers"])
                )
            else:
                layer_types = tuple(
                    "full" if (i + 1) % pattern == 0 else "sliding"
                    for i in range(fields["num_layers"])
                )
            window = c.integer("sliding_window")
        fields["layer_types"] = layer_types
        fields["sliding_window"] = window
    if model_type in {"gemma3_text", "gemma3"}:
        fields["qk_norm"] = "per_head"
    return Architecture(**fields)


def _read_phi3(c: _Config) -> Architecture:
    arch = _read_llama_like(c)
    return arch.model_copy(update={"qkv_bias": False, "o_bias": False})


def _read_gpt2(c: _Config) -> Architecture:
    fields = _core(c)
    hidden = fields["hidden_size"]
    fields.update(
        intermediate_size=c.positive("n_inner", default=4 * hidden),
        hidden_act=c.text("activation_function", "gelu_new"),
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=True,
        o_bias=True,
        norm_kind="layer",
        learned_positions=c.positive("n_positions", "max_position_embeddings"),
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        attention_dropout=c.number("attn_pdrop"),
        hidden_dropout=c.number("resid_pdrop"),
        embedding_dropout=c.number("embd_pdrop"),
    )
    return Architecture(**fields)


def _read_gpt_neox(c: _Config) -> Architecture:
    fields = _core(c)
    fields.update(
        intermediate_size=c.positive("intermediate_size"),
        hidden_act=c.text("hidden_act", "gelu"),
        mlp_gated=False,
        mlp_bias=True,
        qkv_bias=c.flag("attention_bias", True),
        o_bias=c.flag("attention_bias", True),
        norm_kind="layer",
        parallel_block=c.flag("use_parallel_residual", True),
        hidden_dropout=c.number("hidden_dropout"),
    )
    return Architecture(**fields)


def _read_falcon(c: _Config) -> Architecture:
    fields = _core(c)
    heads = fields["num_attention_heads"]
    new_arch = c.flag("new_decoder_architecture", False)
    if new_arch:
        kv = c.positive("num_kv_heads", "num_key_value_heads", default=heads)
    elif c.flag("multi_query", True):
        kv = 1
    else:
        kv = heads
    hidden = fields["hidden_size"]
    parallel = c.flag("parallel_attn", True)
    fields.update(
        num_kv_heads=kv,
        intermediate_size=c.positive("ffn_hidden_size", default=4 * hidden),
        hidden_act=c.text("activation", "gelu"),
        mlp_gated=False,
        mlp_bias=c.flag("bias", False),
        qkv_bias=c.flag("bias", False),
        o_bias=c.flag("bias", False),
        norm_kind="layer",
        parallel_block=parallel or new_arch,
        # Falcon-40B/180B (new architecture, two layer norms by default) vs Falcon-7B (one).
        pre_norms_per_layer=2
        if (new_arch and c.integer("num_ln_in_parallel_attn", default=2) == 2) or not parallel
        else 1,
        tie_word_embeddings=c.flag("tie_word_embeddings", True),
        hidden_dropout=c.number("hidden_dropout"),
        attention_dropout=c.number("attention_dropout"),
    )
    return Architecture(**fields)


def _read_mixtral(c: _Config) -> Architecture:
    arch = _read_llama_like(c)
    experts = c.positive("num_local_experts")
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": arch.intermediate_size,
            "moe_layers": tuple(range(arch.num_layers)),
        }
    )


def _read_qwen_moe(c: _Config) -> Architecture:
    """Qwen1.5/2 MoE (shared expert with a sigmoid gate) and Qwen3 MoE (no shared expert)."""
    arch = _read_qwen3(c) if c.text("model_type", "") == "qwen3_moe" else _read_llama_like(c)
    experts = c.positive("num_experts")
    step = c.positive("decoder_sparse_step", default=1)
    dense_only = set(c.raw.get("mlp_only_layers") or [])
    moe_layers = tuple(
        i for i in range(arch.num_layers) if i not in dense_only and (i + 1) % step == 0
    )
    shared = c.integer("shared_expert_intermediate_size", default=0)
    return arch.model_copy(
        update={
            "num_experts": experts,
            "experts_per_token": c.positive("num_experts_per_tok"),
            "moe_intermediate_size": c.positive("moe_intermediate_size"),
            "shared_expert_intermediate_size": shared,
            "num_shared_experts": 1 if shared else 0,
            "shared_expert_gate": bool(shared),
            "moe_layers": moe_layers,
        }
    )


def _read_deepseek(c: _Config) -> Architecture:
    """DeepSeek V2/V3/R1: multi-head latent attention and MoE with shared experts."""
    fields = _core(c)
    heads = fields["num_attention_heads"]
    rope = c.positive("qk_rope_head_dim")
    nope = c.positive("qk_nope_head_dim")
    v_dim = c.positive("v_head_dim")
    q_rank = c.raw.get("q_lora_rank")
    fields.update(
        attention_kind="mla",
        num_kv_heads=heads,
        head_dim=rope + nope,
        v_head_dim=v_dim,
        q_lora_rank=c.integer("q_lora_rank") if q_rank else None,
        kv_lora_rank=c.positive("kv_lora_rank"),
        qk_rope_head_dim=rope,
        qkv_bias=False,
        o_bias=c.flag("attention_bias", False),
        intermediate_size=c.positive("intermediate_size"),
    )
    experts = c.integer("n_routed_experts", default=0)
    if experts:
        first_dense = c.integer("first_k_dense_replace", default=0)
        freq = c.positive("moe_layer_freq", default=1)
        shared = c.integer("n_shared_experts", default=0)
        moe_inter = c.positive("moe_intermediate_size")
        fields.update(
            num_experts=experts,
            experts_per_token=c.positive("num_experts_per_tok"),
            moe_intermediate_size=moe_inter,
            num_shared_experts=shared,
            shared_expert_intermediate_size=moe_inter * shared,
            moe_layers=tuple(
                i for i in range(fields["num_layers"]) if i >= first_dense and i % freq == 0
            ),
        )
    return Architecture(**fields)


def _read_gpt_oss(c: _Config) -> Architecture:
    fields = _core(c)
    layer_types, window = _layer_types(c, fields["num_layers"])
    experts = c.positive("num_local_experts", "num_experts")
    inter = c.positive("intermediate_size")
    fields.update(
        intermediate_size=inter,
        qkv_bias=c.flag("attention_bias", True),
        o_bias=c.flag("attention_bias", True),
        attention_sinks=True,
        num_experts=experts,
        experts_per_token=c.positive("num_experts_per_tok", "experts_per_token"),
        moe_intermediate_size=inter,
        router_bias=True,
        expert_bias=True,
        moe_layers=tuple(range(fields["num_layers"])),
        layer_types=layer_types,
        sliding_window=window,
    )
    return Architecture(**fields)


def _read_multimodal(config: Mapping[str, Any]) -> Architecture:
    """Multimodal configs (Gemma 3 4B+): the language model plus a SigLIP vision tower."""
    text = dict(config["text_config"])
    text.setdefault("model_type", f"{config.get('model_type', '')}_text")
    if "vocab_size" not in text and "vocab_size" in config:
        text["vocab_size"] = config["vocab_size"]
    arch = Architecture.from_hf_config(text)
    vision = config.get("vision_config")
    extra = 0
    if isinstance(vision, Mapping):
        extra = _siglip_vision_params(_Config(vision), arch.hidden_size, config)
    return arch.model_copy(
        update={"extra_params": extra, "model_type": str(config.get("model_type"))}
    )


def _siglip_vision_params(v: _Config, text_hidden: int, config: Mapping[str, Any]) -> int:
    """SigLIP encoder (modeling_siglip) plus Gemma 3's projector (modeling_gemma3)."""
    hidden = v.positive("hidden_size")
    inter = v.positive("intermediate_size")
    layers = v.positive("num_hidden_layers")
    patch = v.positive("patch_size")
    image = v.positive("image_size")
    channels = v.positive("num_channels", default=3)
    positions = (image // patch) ** 2
    embeddings = channels * patch * patch * hidden + hidden + positions * hidden
    layer = 4 * (hidden * hidden + hidden) + 2 * (hidden * inter) + inter + hidden + 4 * hidden
    post_norm = 2 * hidden
    projector = hidden * text_hidden + hidden  # mm_input_projection_weight + mm_soft_emb_norm
    return embeddings + layers * layer + post_norm + projector


FAMILY_READERS: dict[str, Callable[[_Config], Architecture]] = {
    "llama": _read_llama_like,
    "mistral": _read_llama_like,
    "qwen2": _read_llama_like,
    "yi": _read_llama_like,
    "qwen3": _read_qwen3,
    "olmo2": _read_olmo2,
    "gemma": _read_gemma,
    "gemma2": _read_gemma,
    "gemma3_text": _read_gemma,
    "phi3": _read_phi3,
    "gpt2": _read_gpt2,
    "gpt_neox": _read_gpt_neox,
    "falcon": _read_falcon,
    "mixtral": _read_mixtral,
    "qwen2_moe": _read_qwen_moe,
    "qwen3_moe": _read_qwen_moe,
    "deepseek_v2": _read_deepseek,
    "deepseek_v3": _read_deepseek,
    "gpt_oss": _read_gpt_oss,
}

"""A model's architecture, read from a Hugging Face ``config.json``, and its exact parameter count.

Each family module in ``calculator/estimator/families/`` (one per ``modeling_<family>.py`` of
``transformers``) maps its config fields onto one normalised description (``Architecture``);
parameter counting, shared by all families, lives here and follows the module layout that
``transformers`` builds, so the count equals
``sum(p.numel() for p in model.parameters())`` on the meta device. The committed dataset
``tests/estimator/data/transformers_param_counts.json`` checks that claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from calculator.estimator.bounds import (
    MAX_CONFIG_INTEGER,
    MAX_PARAMS,
    DocumentError,
    check_config_document,
    check_config_integer,
    shown,
)

NormKind = Literal["rms", "layer", "rms_gemma"]
QkNorm = Literal["none", "per_head", "full"]
MixerKind = Literal[
    "attention", "mamba", "mamba2", "gated_deltanet", "short_conv", "lightning", "none"
]
MlpKind = Literal["dense", "moe", "none"]


class RecurrentState(BaseModel):
    """What one non-attention layer keeps per sequence instead of a KV cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: MixerKind
    params: int = Field(ge=0, description="Parameters of one such mixer (conv, projections, A, D).")
    conv_elements: int = Field(ge=0, description="Convolution state per sequence.")
    conv_kernel: int = Field(
        default=0,
        ge=0,
        description="Taps of the convolution: conv_elements is channels × conv_kernel (0: none).",
    )
    state_elements: int = Field(
        ge=0, description="Recurrent (SSM / delta-rule) state per sequence."
    )
    state_fp32: bool = Field(
        default=False, description="The recurrent state is kept in fp32 whatever the model dtype."
    )
    matrices: tuple[tuple[int, int], ...] = Field(
        default=(),
        description="The mixer's weight matrices as (input width, output width), where a runtime "
        "stores each on its own (llama.cpp picks a type per row length); what params has beyond "
        "them and the convolution is vectors and A. Empty: not itemised.",
    )


# What validation/generic_reader_error.py measured: the generic reader run on the configs of
# the families the estimator knows, against transformers' exact counts.
GENERIC_READER_FAMILIES = 59
GENERIC_READER_MEDIAN_ERROR_PERCENT = 0.8
GENERIC_READER_WORST_ERROR_PERCENT = 78.5


def generic_reason(model_type: str) -> str:
    """Why an estimate from the generic reader is approximate, with its measured error."""
    name = f"model_type '{model_type}'" if model_type else "a config without a model_type"
    return (
        f"No family module knows {name}; it was read as a Llama-shaped model (routed experts "
        f"included when the config names them). On the configs of the "
        f"{GENERIC_READER_FAMILIES} families the estimator knows, this generic reading was off "
        f"by {GENERIC_READER_MEDIAN_ERROR_PERCENT:g}% (median) and up to "
        f"{GENERIC_READER_WORST_ERROR_PERCENT:g}% in parameter count."
    )


class ConfigError(ValueError):
    """A config the estimator cannot understand; the message names the missing or bad field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class VisionTower(BaseModel):
    """A vision encoder: its weights are in ``extra_params``; this is what an image costs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens_per_image: int = Field(ge=0, description="Tokens one image adds to the sequence.")
    source: str = Field(description="Where the image-token arithmetic comes from.")


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
    qk_norm_bias: bool = Field(default=False, description="The q/k norms are LayerNorms with bias.")
    attention_sinks: bool = False
    attention_block_params: int | None = Field(
        default=None,
        ge=0,
        description="Parameters of one attention block whose layout the shared counting does not "
        "know (DeepSeek V4: low-rank q, one shared KV head, grouped low-rank output, sinks).",
    )
    attention_output_gate: bool = Field(
        default=False,
        description="q_proj also produces a sigmoid gate on the attention output (Qwen3-Next).",
    )
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
    embedding_width: int | None = Field(
        default=None, gt=0, description="Width of the token embedding when not hidden_size (OPT)."
    )
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
    expert_width: int | None = Field(
        default=None,
        gt=0,
        description="Width the routed experts read and write when not hidden_size: a latent MoE "
        "projects hidden → latent before the experts and back after (Nemotron 3 Super/Ultra).",
    )
    router_bias: bool = False
    expert_bias: bool = False
    moe_layers: tuple[int, ...] = Field(default=(), description="Indices of MoE layers.")
    layer_types: tuple[Literal["full", "sliding"], ...] = ()
    sliding_window: int | None = None
    max_position_embeddings: int | None = None
    extra_params: int = Field(
        default=0, ge=0, description="Parameters outside the language model (vision tower)."
    )
    other_params: int = Field(
        default=0,
        ge=0,
        description="Language-model parameters outside the shared per-layer layout (per-layer "
        "embeddings, MTP layers, extra norms and projections).",
    )
    per_layer_embedding: tuple[int, int] | None = Field(
        default=None,
        description="A second embedding table, part of other_params, read like the token "
        "embeddings: (rows, width), Gemma 3n's and Gemma 4's per-layer inputs "
        "(vocab_size_per_layer_input, layers × hidden_size_per_layer_input).",
    )
    unquantized_params: int = Field(
        default=0,
        ge=0,
        description="Elements of other_params in matrices llama-quantize keeps in the source "
        "file's type (Gemma 3n's AltUp and LAuReL matrices, per_layer_model_proj: "
        "tensor_allows_quantization in llama-quant.cpp).",
    )
    mixer_kinds: tuple[MixerKind, ...] = Field(
        default=(), description="Per layer: what mixes tokens; empty means attention everywhere."
    )
    recurrent: tuple[RecurrentState, ...] = Field(
        default=(), description="Shape of each non-attention mixer kind used in mixer_kinds."
    )
    no_mlp_layers: tuple[int, ...] = Field(default=(), description="Layers without an MLP.")
    parallel_recurrent: RecurrentState | None = Field(
        default=None,
        description="A recurrent mixer running beside attention in every layer (Falcon-H1).",
    )
    vision: VisionTower | None = None
    kv_shared_layers: int = Field(
        default=0,
        ge=0,
        description="The last layers that reuse an earlier layer's keys and values (Gemma 3n).",
    )
    kv_layer_shapes: tuple[tuple[int, int, int], ...] = Field(
        default=(),
        description="Per layer (KV heads, key head size, value head size) where layers differ "
        "(Gemma 4's full-attention layers: global_head_dim and their own KV heads); empty: "
        "num_kv_heads, head_dim and v_head_dim in every layer.",
    )
    indexer_layers: tuple[int, ...] = Field(
        default=(), description="Layers that run a lightning indexer (DeepSeek Sparse Attention)."
    )
    indexer_head_dim: int | None = Field(
        default=None, gt=0, description="Key width of the lightning indexer (index_head_dim)."
    )
    approximate_reason: str | None = Field(
        default=None, description="Why the count is not verified for this family (generic reader)."
    )
    params_override: int | None = Field(
        default=None, description="A stated total for a custom model; overrides the count."
    )

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any]) -> Architecture:
        """Read a published ``config.json`` with the reader its family module registered,
        within the bounds every model description shares (``bounds``): a document no model
        configuration can be, or a model past ``MAX_PARAMS`` parameters, is a ``ConfigError``."""
        if not isinstance(config, Mapping):
            raise ConfigError("The config must be a JSON object.")
        try:
            check_config_document(config)
        except DocumentError as error:
            raise ConfigError(str(error), error.field) from error
        try:
            arch = cls._read(config)
        except ConfigError:
            raise
        except (ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as error:
            # A family reader met a value of a shape no published config has (a list where a
            # number belongs, an out-of-range index): the config's fault, said as such.
            raise ConfigError(f"The config cannot be read: {error}") from error
        if arch.params_total > MAX_PARAMS:
            raise ConfigError(
                f"The config describes {shown(arch.params_total)} parameters; at most "
                f"{MAX_PARAMS:.0e} are accepted. Check its sizes (hidden_size, "
                "intermediate_size, vocab_size, the expert counts)."
            )
        return arch

    @classmethod
    def _read(cls, config: Mapping[str, Any]) -> Architecture:
        family_of, reader_for = _family_readers()
        family = family_of(config)
        model_type = str(config.get("model_type") or "")
        if family is None:
            arch = reader_for(config)(ConfigFields(config))
            reason = generic_reason(model_type)
            if isinstance(config.get("vision_config"), Mapping):
                reason += " Its vision tower is not counted."
            return arch.model_copy(update={"approximate_reason": reason})
        if family != model_type:
            # Read as the family its ``architectures`` names; keep the config's own name.
            arch = reader_for(config)(ConfigFields({**config, "model_type": family}))
            return arch.model_copy(update={"model_type": model_type or family})
        return reader_for(config)(ConfigFields(config))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied and no cached derived size: those live in the
        instance's ``__dict__``, which pydantic copies, so a copy with more ``extra_params``
        would otherwise keep the original's ``params_total``."""
        copied = super().model_copy(update=update, deep=deep)
        for name in _CACHED_SIZES:
            copied.__dict__.pop(name, None)
        return copied

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
    def v_width(self) -> int:
        """Value projection width: v_head_dim per KV head (MiMo-V2-Flash: 128 beside 192 for q·k)."""
        return self.num_kv_heads * self.v_head_dim

    @property
    def attn_out_width(self) -> int:
        return self.num_attention_heads * self.v_head_dim

    @property
    def sliding_layer_count(self) -> int:
        return sum(1 for kind in self.layer_types if kind == "sliding")

    def is_moe_layer(self, index: int) -> bool:
        return self.is_moe and index in self.moe_layers

    def mixer_kind(self, index: int) -> MixerKind:
        return self.mixer_kinds[index] if self.mixer_kinds else "attention"

    def mlp_kind(self, index: int) -> MlpKind:
        if index in self.no_mlp_layers:
            return "none"
        return "moe" if self.is_moe_layer(index) else "dense"

    def mlp_kinds(self) -> tuple[MlpKind, ...]:
        """``mlp_kind`` of every layer in one pass: the index tuples are read once into sets, where
        a ``mlp_kind`` call per layer scans them (quadratic in the depth of a pasted config)."""
        moe = frozenset(self.moe_layers) if self.is_moe else frozenset()
        none = frozenset(self.no_mlp_layers)
        return tuple(
            "none" if i in none else "moe" if i in moe else "dense" for i in range(self.num_layers)
        )

    def is_attention_layer(self, index: int) -> bool:
        return self.mixer_kind(index) == "attention"

    def kv_shape(self, index: int) -> tuple[int, int, int]:
        """(KV heads, key head size, value head size) of layer ``index``."""
        if self.kv_layer_shapes:
            return self.kv_layer_shapes[index]
        return self.num_kv_heads, self.head_dim, self.v_head_dim

    def keeps_kv(self, index: int) -> bool:
        """An attention layer with its own KV cache (not one sharing an earlier layer's)."""
        return self.is_attention_layer(index) and index < self.num_layers - self.kv_shared_layers

    @property
    def attention_layer_count(self) -> int:
        return sum(1 for i in range(self.num_layers) if self.is_attention_layer(i))

    def recurrent_state(self, kind: MixerKind) -> RecurrentState:
        for state in self.recurrent:
            if state.kind == kind:
                return state
        raise ValueError(f"no recurrent description for mixer kind {kind!r}")

    @property
    def moe_layer_count(self) -> int:
        return len(self.moe_layers) if self.is_moe else 0

    @cached_property
    def layer_kinds(self) -> tuple[tuple[int, int], ...]:
        """(index of a representative layer, how many layers share its structure)."""
        if not (self.mixer_kinds or self.no_mlp_layers or self.kv_shared_layers):
            # Attention everywhere: dense layers and MoE layers are the only two kinds.
            moe = set(self.moe_layers) if self.is_moe else set()
            kinds = []
            dense = [i for i in range(self.num_layers) if i not in moe]
            if dense:
                kinds.append((dense[0], len(dense)))
            if moe:
                kinds.append((min(moe), len(moe)))
            return tuple(kinds)
        groups: dict[tuple[str, str, bool], list[int]] = {}
        for i, mlp in enumerate(self.mlp_kinds()):
            shared = i >= self.num_layers - self.kv_shared_layers
            groups.setdefault((self.mixer_kind(i), mlp, shared), []).append(i)
        return tuple((layers[0], len(layers)) for layers in groups.values())

    # --- parameter counts (exact, per transformers' module layout) ------------------------
    def norm_params(self, width: int) -> int:
        return 2 * width if self.norm_kind == "layer" else width

    def attention_params(self) -> int:
        """One attention block: projections, their biases, q/k norms and sinks."""
        if self.attention_block_params is not None:
            return self.attention_block_params
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
        q, kv, v = self.q_width, self.kv_width, self.v_width
        params = h * (q + kv + v) + self.attn_out_width * h
        if self.attention_output_gate:
            params += h * q
        if self.qkv_bias:
            params += q + kv + v
        if self.o_bias:
            params += h
        norm_copies = 2 if self.qk_norm_bias else 1
        if self.qk_norm == "per_head":
            params += norm_copies * 2 * self.head_dim
        elif self.qk_norm == "full":
            params += norm_copies * (q + kv)
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
        expert = self.routed_expert_params
        if self.expert_bias:
            expert += (2 if self.mlp_gated else 1) * self.moe_intermediate_size + (
                self.expert_width or h
            )
        params += e * expert
        if self.expert_width:
            # fc1_latent_proj / fc2_latent_proj (modeling_nemotron_h.py NemotronHMoE).
            params += 2 * h * self.expert_width
            if self.mlp_bias:
                params += self.expert_width + h
        if self.shared_expert_intermediate_size:
            params += self.dense_mlp_params(self.shared_expert_intermediate_size)
        if self.shared_expert_gate:
            params += h
        return params

    @property
    def routed_expert_params(self) -> int:
        """The weight matrices of one routed expert (on ``expert_width`` when latent)."""
        width = self.expert_width or self.hidden_size
        return (3 if self.mlp_gated else 2) * width * self.moe_intermediate_size

    def shared_kv_saving(self) -> int:
        """What a layer that reuses another's keys and values lacks: k_proj, v_proj, k_norm."""
        kv = self.kv_width + self.v_width
        saving = self.hidden_size * kv + (kv if self.qkv_bias else 0)
        if self.qk_norm == "per_head":
            saving += self.head_dim
        elif self.qk_norm == "full":
            saving += self.kv_width
        return saving

    def mixer_params(self, index: int) -> int:
        kind = self.mixer_kind(index)
        if kind == "attention":
            if index >= self.num_layers - self.kv_shared_layers:
                return self.attention_params() - self.shared_kv_saving()
            return self.attention_params()
        if kind == "none":
            return 0
        return self.recurrent_state(kind).params

    def mlp_params(self, index: int) -> int:
        kind = self.mlp_kind(index)
        if kind == "none":
            return 0
        return self.moe_params() if kind == "moe" else self.dense_mlp_params()

    def layer_params(self, index: int) -> int:
        norms = (self.pre_norms_per_layer + self.post_norms_per_layer) * self.norm_params(
            self.hidden_size
        )
        beside = self.parallel_recurrent.params if self.parallel_recurrent else 0
        return self.mixer_params(index) + beside + self.mlp_params(index) + norms

    @property
    def embedding_params(self) -> int:
        width = self.embedding_width or self.hidden_size
        return self.vocab_size * width + self.learned_positions * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The output projection's own parameters (zero weight when tied to the embedding)."""
        width = self.embedding_width or self.hidden_size
        weight = 0 if self.tie_word_embeddings else self.vocab_size * width
        return weight + (self.vocab_size if self.lm_head_bias else 0)

    @cached_property
    def params_total(self) -> int:
        if self.params_override is not None:
            return self.params_override
        layers = sum(count * self.layer_params(index) for index, count in self.layer_kinds)
        final = self.norm_params(self.hidden_size) if self.final_norm else 0
        return (
            self.embedding_params
            + layers
            + final
            + self.lm_head_params
            + self.other_params
            + self.extra_params
        )

    @property
    def params_active(self) -> int:
        """Parameters one token touches: routed experts count only ``experts_per_token``."""
        if not self.is_moe:
            return self.params_total
        expert = self.routed_expert_params
        idle = (self.num_experts - self.experts_per_token) * expert * self.moe_layer_count
        return self.params_total - idle

    @cached_property
    def linear_params(self) -> int:
        """Parameters held in matrices that weight quantization packs (decoder linears, experts)."""
        h = self.hidden_size
        total = 0
        for index, count in self.layer_kinds:
            if not self.is_attention_layer(index):
                recurrent = self.mixer_params(index)
                mlp_kind = self.mlp_kind(index)
                total += count * (recurrent + (self.mlp_params(index) if mlp_kind != "none" else 0))
                continue
            attention = self.attention_params()
            if self.qkv_bias:
                attention -= self.q_width + self.kv_width + self.v_width
            if self.o_bias:
                attention -= h
            copies = 2 if self.qk_norm_bias else 1
            if self.qk_norm == "per_head":
                attention -= copies * 2 * self.head_dim
            elif self.qk_norm == "full":
                attention -= copies * (self.q_width + self.kv_width)
            if self.attention_sinks:
                attention -= self.num_attention_heads
            if self.attention_kind == "mla":
                attention -= (self.q_lora_rank or 0) + (self.kv_lora_rank or 0)
            if self.mlp_kind(index) == "none":
                mlp = 0
            elif self.is_moe_layer(index):
                mlp = self.num_experts * self.routed_expert_params
                if self.expert_width:
                    mlp += 2 * h * self.expert_width
                if self.shared_expert_intermediate_size:
                    mlp += (3 if self.mlp_gated else 2) * h * self.shared_expert_intermediate_size
            else:
                mlp = (3 if self.mlp_gated else 2) * h * self.intermediate_size
            total += count * (attention + mlp)
        return total

    @cached_property
    def largest_layer_params(self) -> int:
        return max(self.layer_params(index) for index, _count in self.layer_kinds)


_CACHED_SIZES = tuple(
    name for name, value in vars(Architecture).items() if isinstance(value, cached_property)
)


# --- reading configs ---------------------------------------------------------------------
class ConfigFields:
    """Typed access to a config dict with clear errors naming the field."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def has(self, *names: str) -> bool:
        return any(self.raw.get(name) is not None for name in names)

    def section(self, name: str) -> Mapping[str, Any]:
        """A nested config (``text_config``, ``vision_config``) that must be there."""
        value = self.raw.get(name)
        if not isinstance(value, Mapping):
            raise ConfigError(f"Config is missing the object '{name}'.", name)
        return value

    def require(self, *names: str) -> None:
        """Raise a ``ConfigError`` naming the first of these fields the config lacks."""
        for name in names:
            if self.raw.get(name) is None:
                model_type = self.text("model_type", "")
                family = f" (a {model_type} config names it so)" if model_type else ""
                raise ConfigError(f"Config is missing the field '{name}'{family}.", name)

    def integer(self, *names: str, default: int | None = None) -> int:
        for name in names:
            value = self.raw.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"Config field '{name}' must be a number, got {value!r}.", name)
            problem = check_config_integer(name, value)
            if problem:
                raise ConfigError(problem, name)
            return int(value)
        if default is not None:
            return default
        raise ConfigError(
            f"Config is missing the field '{names[0]}'"
            + (f" (also looked for {', '.join(repr(n) for n in names[1:])})" if names[1:] else "")
            + ".",
            names[0],
        )

    def integers(self, name: str) -> list[int]:
        """A list of non-negative integers (layer indices), empty when the field is absent."""
        value = self.raw.get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(item, int) and not isinstance(item, bool) and item >= 0 for item in value
        ):
            raise ConfigError(f"Config field '{name}' must be a list of layer indices.", name)
        return list(value)

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
            if isinstance(value, int) and abs(value) > MAX_CONFIG_INTEGER:
                raise ConfigError(f"Config field '{name}' is too large, got {shown(value)}.", name)
            if not math.isfinite(value):
                raise ConfigError(
                    f"Config field '{name}' must be a finite number, got {value!r}.", name
                )
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


def core_fields(c: ConfigFields, *, head_dim_from_hidden: bool = True) -> dict[str, Any]:
    """Fields every decoder-only config carries under the standard names (or GPT-2's).

    ``head_dim_from_hidden=False`` for families whose head size is not ``hidden / heads``
    (latent attention), so an indivisible pair is no error there."""
    hidden = c.positive("hidden_size", "n_embd", "d_model")
    heads = c.positive("num_attention_heads", "n_head", "num_heads")
    if head_dim_from_hidden and hidden % heads and not c.has("head_dim"):
        raise ConfigError(
            f"hidden_size {hidden} is not divisible by num_attention_heads {heads}; "
            "the config needs an explicit 'head_dim'.",
            "head_dim",
        )
    head_dim = c.positive("head_dim", default=max(1, hidden // heads))
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


def layer_types_from(
    c: ConfigFields, num_layers: int
) -> tuple[tuple[Literal["full", "sliding"], ...], int | None]:
    """Which layers use a sliding window, from the config's ``layer_types`` list."""
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


# How a config finds its family's reader: the family modules (estimator/families) build on this
# module, so it does not import them; their registry hands these two functions over once all of
# them are imported (families/__init__.py), and the estimator package imports the families.
FamilyOf = Callable[[Mapping[str, Any]], "str | None"]
ReaderFor = Callable[[Mapping[str, Any]], Callable[["ConfigFields"], Architecture]]
_FAMILY_READERS: dict[str, Any] = {}


def use_family_readers(family_of: FamilyOf, reader_for: ReaderFor) -> None:
    _FAMILY_READERS.update(family_of=family_of, reader_for=reader_for)


def _family_readers() -> tuple[FamilyOf, ReaderFor]:
    if not _FAMILY_READERS:
        raise RuntimeError("calculator.estimator.families was not imported: import the package")
    return _FAMILY_READERS["family_of"], _FAMILY_READERS["reader_for"]

"""llama.cpp (and Ollama / LM Studio, which embed it): GGUF weights and the buffers printed at load.

Sources, read at named commits of https://github.com/ggml-org/llama.cpp (facts only, no code):

- ggml's type traits (``ggml/src/ggml.c`` ``type_traits[]``, block structs in
  ``ggml/src/ggml-common.h``): elements per block and bytes per block of every tensor type.
- ``src/llama-quant.cpp`` @ 007dbbf3fd17eefe9b47fee45f48f7ba5e62b714: ``llama_ftype_get_default_type``
  (a file type's base tensor type), ``llama_tensor_get_type_impl`` (the per-tensor mix of the
  ``_S``/``_M``/``_L`` and IQ types: ``attn_v``, ``ffn_down``, ``attn_output``, ``output`` and
  ``token_embd`` rules), ``tensor_allows_quantization`` (1-D tensors and norms stay F32, the MoE
  router stays in its source type) and ``tensor_type_fallback`` (rows not divisible by the block).
- ``src/llama-model.cpp``: layer placement for ``-ngl`` (the first ``n_layer + 1 - ngl`` layers stay on
  the host; the output layer counts as one layer; the token-embedding table is always on the host
  because it is read with ``get_rows``; tied embeddings are duplicated for the output head).
- ``src/llama-kv-cache.cpp`` / ``src/llama-kv-cache-iswa.cpp``: one K and one V tensor per attention
  layer of ``ggml_row_size(type, n_embd_{k,v}_gqa) × kv_size``; sliding-window layers get
  ``min(kv_size, pad(n_swa · n_seq + n_ubatch))`` cells unless ``--swa-full``; ``n_ctx`` padded to 256.
  Since https://github.com/ggml-org/llama.cpp/pull/21277 (April 2026) the sliding-window cache stays
  F16 whatever ``-ctk``/``-ctv`` say.
- ``src/llama-memory-recurrent.cpp`` @ 76d94392764a8bcc1e93bd6f248c30aec2cfac9a (hybrid and
  recurrent models: Mamba, Mamba-2, Gated DeltaNet, LFM2 short convolutions, …): per recurrent layer
  an R tensor of ``n_embd_r · mem_size`` and an S tensor of ``n_embd_s · mem_size`` elements on the
  layer's device (host when the layer is not offloaded), printed per buffer as
  ``llama_memory_recurrent: CUDA0 RS buffer size = …`` and in all as
  ``llama_memory_recurrent: size = … R (f32): … S (f32): …``; attention layers of a hybrid keep an
  ordinary KV cache. ``src/llama-model.cpp`` ``create_memory`` @
  00342301d01add50835550e8a916f12097d94517 passes ``mem_size = max(1, n_seq_max)`` (one cell per
  ``--parallel`` slot, unified KV cache or not) and F32 for both whatever ``-ctk``/``-ctv`` say.
  ``src/llama-hparams.cpp`` @ 01b77b5793989e0a1508a2fe3757d4e743a7bbd1: ``n_embd_r`` keeps
  ``d_conv - 1`` columns of the convolution state (the first is shifted out each step), ``n_embd_s``
  is the recurrent state. Newer builds add rollback rows (``mem_size · (1 + n_rs_seq)``) only for
  speculative decoding with a draft model; ``n_rs_seq`` is 0 otherwise and not modelled.
- ``src/llama-context.cpp``: the worst-case graph reserved for ``min(n_ctx, n_ubatch)`` tokens and all
  ``n_ctx`` cells, with logits for every token of the micro-batch; the output buffer holds
  ``n_vocab`` f32 logits per sequence.

The compute buffer is the one part modelled rather than mirrored: ggml's allocator reuses memory, so we
take the largest live set of the three phases of the reserved graph (attention, feed-forward, output
head), as the logs' ``CUDA0 compute buffer size`` lines show (see ``validation/published``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from calculator.estimator.architecture import Architecture, RecurrentState

MIB = 1 << 20

GgufType = Literal[
    "F32",
    "BF16",
    "F16",
    "Q8_0",
    "Q6_K",
    "Q5_K_M",
    "Q5_K_S",
    "Q5_1",
    "Q5_0",
    "Q4_K_M",
    "Q4_K_S",
    "Q4_1",
    "Q4_0",
    "IQ4_XS",
    "IQ4_NL",
    "Q3_K_L",
    "Q3_K_M",
    "Q3_K_S",
    "IQ3_M",
    "IQ3_S",
    "IQ3_XXS",
    "Q2_K",
    "IQ2_M",
    "IQ2_S",
    "IQ2_XS",
    "IQ2_XXS",
    "IQ1_M",
    "IQ1_S",
]
GGUF_TYPES: tuple[str, ...] = GgufType.__args__  # type: ignore[attr-defined]

CacheType = Literal["f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"]

# ggml type traits: (elements per block, bytes per block) — ggml/src/ggml-common.h block structs.
GGML_BLOCK: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "MXFP4": (32, 17),
    "Q2_K": (256, 84),
    "Q3_K": (256, 110),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
    "IQ1_S": (256, 50),
    "IQ1_M": (256, 56),
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ2_S": (256, 82),
    "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
}

# llama_ftype_get_default_type (llama-quant.cpp): the base tensor type of each file type.
_DEFAULT_TYPE: dict[str, str] = {
    "F32": "F32",
    "BF16": "BF16",
    "F16": "F16",
    "Q8_0": "Q8_0",
    "Q6_K": "Q6_K",
    "Q5_K_M": "Q5_K",
    "Q5_K_S": "Q5_K",
    "Q5_1": "Q5_1",
    "Q5_0": "Q5_0",
    "Q4_K_M": "Q4_K",
    "Q4_K_S": "Q4_K",
    "Q4_1": "Q4_1",
    "Q4_0": "Q4_0",
    "IQ4_XS": "IQ4_XS",
    "IQ4_NL": "IQ4_NL",
    "Q3_K_L": "Q3_K",
    "Q3_K_M": "Q3_K",
    "Q3_K_S": "Q3_K",
    "IQ3_M": "IQ3_S",
    "IQ3_S": "IQ3_S",
    "IQ3_XXS": "IQ3_XXS",
    "Q2_K": "Q2_K",
    "IQ2_M": "IQ2_S",
    "IQ2_S": "IQ2_XS",
    "IQ2_XS": "IQ2_XS",
    "IQ2_XXS": "IQ2_XXS",
    "IQ1_M": "IQ1_M",
    "IQ1_S": "IQ1_S",
}
_FLOAT_FILES = frozenset({"F32", "BF16", "F16"})
_IQ_LOW = frozenset({"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M"})
# tensor_type_fallback: a block-256 type on rows not divisible by 256 falls back to a block-32 type.
_FALLBACK: dict[str, str] = {
    "IQ1_S": "IQ4_NL",
    "IQ1_M": "IQ4_NL",
    "IQ2_XXS": "IQ4_NL",
    "IQ2_XS": "IQ4_NL",
    "IQ2_S": "IQ4_NL",
    "IQ3_XXS": "IQ4_NL",
    "IQ3_S": "IQ4_NL",
    "IQ4_XS": "IQ4_NL",
    "Q2_K": "Q4_0",
    "Q3_K": "Q4_0",
    "Q4_K": "Q5_0",
    "Q5_K": "Q5_1",
    "Q6_K": "Q8_0",
}
# Architectures llama.cpp runs with an interleaved sliding-window cache (llama-model.cpp sets
# swa layers for them); Mistral's config window is ignored by llama.cpp's llama architecture.
_ISWA_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "gpt_oss", "cohere2", "llama4"})
# Families whose GGUF converter keeps Q/K/V fused in one ``attn_qkv`` tensor (convert_hf_to_gguf.py).
_FUSED_QKV = frozenset({"gpt2", "gpt_neox", "falcon", "phi3"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LlamaCppOptions(_Frozen):
    """What ``llama-server`` takes; defaults are llama-server's own (``common/common.h``)."""

    gguf_type: GgufType = "Q4_K_M"
    n_ctx: int = Field(default=4096, ge=1, le=10_000_000, description="-c, all sequences together")
    n_batch: int = Field(default=2048, ge=1, le=1_000_000, description="-b")
    n_ubatch: int = Field(default=512, ge=1, le=1_000_000, description="-ub")
    n_parallel: int = Field(default=4, ge=1, le=4096, description="-np (llama-server slots)")
    flash_attention: bool = Field(default=True, description="-fa (auto: on where supported)")
    cache_type_k: CacheType = "f16"
    cache_type_v: CacheType = "f16"
    n_gpu_layers: int | None = Field(default=None, ge=0, description="-ngl; None = all")
    swa_full: bool = Field(default=False, description="--swa-full: full-size sliding caches")


# Ollama's own defaults (ollama/ollama@fb30760 envconfig/config.go, api/types.go, docs/faq.mdx):
# one slot, batch 512, f16 cache unless OLLAMA_KV_CACHE_TYPE, flash attention "auto" (on where
# the GPU backend supports it, as CUDA and Metal do) unless OLLAMA_FLASH_ATTENTION says otherwise,
# and a 4096-token context on cards under 24 GiB (larger cards get 32k or 256k by default).
OLLAMA_DEFAULTS = LlamaCppOptions(
    n_ctx=4096, n_batch=512, n_ubatch=512, n_parallel=1, flash_attention=True
)
# LM Studio loads with a 4096 context, one sequence, flash attention off by default.
LM_STUDIO_DEFAULTS = LlamaCppOptions(n_ctx=4096, n_parallel=1, flash_attention=False)


class DeviceBytes(_Frozen):
    """One llama.cpp buffer split by where it lives."""

    # Read back from its own JSON (saved results, API responses), computed fields included.
    model_config = ConfigDict(frozen=True, extra="ignore")

    gpu: int = Field(ge=0)
    host: int = Field(ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        return self.gpu + self.host


class LlamaCppResult(_Frozen):
    # Read back from its own JSON (saved results, API responses), computed fields included.
    model_config = ConfigDict(frozen=True, extra="ignore")

    gguf_type: str
    gguf_file_bytes: int = Field(description="Tensor data, as `print_info: file size` counts it.")
    bits_per_weight: float
    tensor_types: dict[str, int] = Field(description="Tensor count per ggml type.")
    n_ctx_padded: int
    kv_cells_full: int
    kv_cells_swa: int
    gpu_layers: int = Field(description="Layers on the GPU, counting the output layer as one.")
    model_buffer: DeviceBytes
    kv_buffer: DeviceBytes
    recurrent_buffer: DeviceBytes = Field(
        description="Conv and recurrent states of hybrid/recurrent layers, F32, one per slot "
        "(llama_memory_recurrent's RS buffer)."
    )
    compute_buffer: DeviceBytes
    output_buffer_bytes: int = Field(description="Host logits buffer (CUDA_Host output buffer).")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gpu_bytes(self) -> int:
        """GPU memory: model, KV, RS and compute buffers (what ``-ngl`` and ``-c`` searches
        compare; the estimate's total adds the CUDA context)."""
        return (
            self.model_buffer.gpu
            + self.kv_buffer.gpu
            + self.recurrent_buffer.gpu
            + self.compute_buffer.gpu
        )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def host_bytes(self) -> int:
        """CPU RAM: host weights (mmapped), host KV, host compute and output buffers."""
        return (
            self.model_buffer.host
            + self.kv_buffer.host
            + self.recurrent_buffer.host
            + self.compute_buffer.host
            + self.output_buffer_bytes
        )


# --- the GGUF tensor inventory -------------------------------------------------------------
Category = Literal[
    "token_embd",
    "output",
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_qkv",
    "attn_kv_b",
    "attn_output",
    "ffn_up",
    "ffn_gate",
    "ffn_down",
    "other",
]


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of the file: ``ne0`` is the row length that must divide by the block size."""

    name: str
    category: Category
    layer: int | None
    ne0: int
    rows: int
    quantizable: bool

    @property
    def elements(self) -> int:
        return self.ne0 * self.rows


def _layer_tensors(arch: Architecture, il: int) -> list[GgufTensor]:
    """The tensors of one block as ``convert_hf_to_gguf.py`` names them (``blk.N.*``)."""
    h = arch.hidden_size
    out: list[GgufTensor] = []

    def add(name: str, cat: Category, ne0: int, rows: int, quantizable: bool = True) -> None:
        out.append(GgufTensor(f"blk.{il}.{name}", cat, il, ne0, rows, quantizable))

    norms = arch.pre_norms_per_layer + arch.post_norms_per_layer
    norm_width = 2 * h if arch.norm_kind == "layer" else h
    add("norms", "other", norm_width * max(norms, 1), 1, False)
    if arch.attention_kind == "mla":
        heads = arch.num_attention_heads
        kv_rank = arch.kv_lora_rank or 0
        rope = arch.qk_rope_head_dim or 0
        if arch.q_lora_rank:
            add("attn_q_a", "other", h, arch.q_lora_rank)
            add("attn_q_b", "attn_q", arch.q_lora_rank, heads * arch.head_dim)
            add("attn_q_a_norm", "other", arch.q_lora_rank, 1, False)
        else:
            add("attn_q", "attn_q", h, heads * arch.head_dim)
        add("attn_kv_a_mqa", "other", h, kv_rank + rope)
        add("attn_kv_a_norm", "other", kv_rank, 1, False)
        nope = arch.head_dim - rope
        add("attn_kv_b", "attn_kv_b", kv_rank, heads * (nope + arch.v_head_dim))
    elif arch.model_type in _FUSED_QKV:
        add("attn_qkv", "attn_qkv", h, arch.q_width + 2 * arch.kv_width)
    else:
        add("attn_q", "attn_q", h, arch.q_width)
        add("attn_k", "attn_k", h, arch.kv_width)
        add("attn_v", "attn_v", h, arch.kv_width)
    add("attn_output", "attn_output", arch.attn_out_width, h)
    small = 0
    if arch.qkv_bias:
        small += arch.q_width + 2 * arch.kv_width
    if arch.o_bias:
        small += h
    if arch.qk_norm == "per_head":
        small += 2 * arch.head_dim
    elif arch.qk_norm == "full":
        small += arch.q_width + arch.kv_width
    if arch.attention_sinks:
        small += arch.num_attention_heads
    if small:
        add("attn_small", "other", small, 1, False)

    def mlp(suffix: str, inter: int, count: int) -> None:
        up_rows = inter * count
        if arch.mlp_gated and arch.model_type == "phi3":
            add(f"ffn_up{suffix}", "ffn_up", h, 2 * up_rows)  # gate_up_proj kept fused
        else:
            if arch.mlp_gated:
                add(f"ffn_gate{suffix}", "ffn_gate", h, up_rows)
            add(f"ffn_up{suffix}", "ffn_up", h, up_rows)
        add(f"ffn_down{suffix}", "ffn_down", inter, h * count)

    if arch.is_moe_layer(il):
        add("ffn_gate_inp", "other", h, arch.num_experts, False)
        mlp("_exps", arch.moe_intermediate_size, arch.num_experts)
        if arch.shared_expert_intermediate_size:
            mlp("_shexp", arch.shared_expert_intermediate_size, 1)
        if arch.expert_bias or arch.router_bias:
            bias = arch.num_experts if arch.router_bias else 0
            if arch.expert_bias:
                width = (2 if arch.mlp_gated else 1) * arch.moe_intermediate_size + h
                bias += arch.num_experts * width
            add("ffn_bias", "other", bias, 1, False)
    else:
        mlp("", arch.intermediate_size, 1)
        if arch.mlp_bias:
            bias = (2 if arch.mlp_gated else 1) * arch.intermediate_size + h
            add("ffn_bias", "other", bias, 1, False)
    return out


def gguf_tensors(arch: Architecture) -> list[GgufTensor]:
    """Every tensor of a GGUF conversion of ``arch`` (shapes from the config)."""
    h, v = arch.hidden_size, arch.vocab_size
    tensors = [GgufTensor("token_embd", "token_embd", None, h, v, True)]
    if arch.learned_positions:
        tensors.append(GgufTensor("position_embd", "other", None, h, arch.learned_positions, False))
    for il in range(arch.num_layers):
        tensors.extend(_layer_tensors(arch, il))
    if arch.final_norm:
        width = 2 * h if arch.norm_kind == "layer" else h
        tensors.append(GgufTensor("output_norm", "other", None, width, 1, False))
    if not arch.tie_word_embeddings:
        tensors.append(GgufTensor("output", "output", None, h, v, True))
    return tensors


# --- per-tensor type choice (llama-quant.cpp) -------------------------------------------------
@dataclass
class _QuantState:
    ftype: str
    n_layer: int
    n_gqa: int
    n_expert: int
    falcon: bool
    is_70b: bool
    tied: bool
    has_imatrix: bool
    n_attention_wv: int
    i_attention_wv: int = 0
    i_ffn_down: int = 0


def _use_more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp ``use_more_bits``: the first and last eighth and every third layer between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _choose_type(qs: _QuantState, t: GgufTensor, new: str) -> str:
    """``llama_tensor_get_type_impl`` for the file types we offer (read at the commit above)."""
    f = qs.ftype
    cat = t.category
    attn_v_like = cat in ("attn_v", "attn_qkv", "attn_kv_b")
    if cat == "output" or (qs.tied and cat == "token_embd"):
        if qs.falcon or t.ne0 % GGML_BLOCK[new][0]:
            return "Q8_0"
        if f in {"IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"}:
            return "Q5_K"
        return new if new == "Q8_0" else "Q6_K"
    if cat == "token_embd":
        if f in {"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"}:
            return "Q2_K"
        if f in {"IQ2_S", "IQ2_M", "IQ3_XXS"}:
            return "IQ3_S"
        return new
    if f in _IQ_LOW:
        low = "IQ3_S" if f in {"IQ2_S", "IQ2_M"} else "Q2_K"
        if attn_v_like:
            qs.i_attention_wv += 1
            return "Q4_K" if qs.n_gqa >= 4 or qs.n_expert >= 4 else low
        if qs.n_expert == 8 and cat == "attn_k":
            return "Q4_K"
        if cat == "ffn_down":
            layer = qs.i_ffn_down if t.layer is None else t.layer
            qs.i_ffn_down += 1
            return low if layer < qs.n_layer // 8 else new
        if cat == "attn_output":
            if qs.n_expert == 8:
                return "Q5_K"
            if f in {"IQ1_S", "IQ1_M"}:
                return "IQ2_XXS"
            if f in {"IQ2_S", "IQ2_M"}:
                return "IQ3_S"
        return new
    if attn_v_like:
        i, n = qs.i_attention_wv, qs.n_attention_wv
        if f == "Q2_K":
            new = "Q4_K" if qs.n_gqa >= 4 else "Q3_K"
        elif f == "IQ3_XXS":
            new = "Q4_K" if qs.n_gqa >= 4 else ("IQ3_XXS" if qs.has_imatrix else "IQ3_S")
        elif (f == "IQ3_S" and qs.n_gqa >= 4) or f == "IQ3_M":
            new = "Q4_K"
        elif f == "Q3_K_M":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif f == "Q3_K_L" or (f in {"IQ4_NL", "IQ4_XS"} and qs.n_gqa >= 4):
            new = "Q5_K"
        elif f in {"Q4_K_M", "Q5_K_M"} and _use_more_bits(i, n):
            new = "Q6_K"
        elif f == "Q4_K_S" and i < 4:
            new = "Q5_K"
        if qs.is_70b and new in {"Q3_K", "Q4_K"}:
            new = "Q5_K"
        if qs.n_expert == 8:
            new = "Q8_0"
        qs.i_attention_wv += 1
        return new
    if cat == "attn_k":
        if qs.n_expert == 8:
            return "Q8_0"
        if f == "IQ3_XXS":
            return "IQ2_S"
        return new
    if cat == "attn_q":
        return "IQ2_S" if f == "IQ3_XXS" else new
    if cat == "ffn_down":
        i = qs.i_ffn_down if t.layer is None else t.layer
        n = qs.n_layer
        qs.i_ffn_down += 1
        if f == "Q2_K":
            return "Q3_K"
        if f == "IQ3_XXS" and not qs.has_imatrix:
            return "Q4_K" if i < n // 8 else "Q3_K"
        if f == "Q3_K_M":
            if i < n // 16:
                return "Q5_K"
            return "Q4_K" if not qs.falcon or _use_more_bits(i, n) else "Q3_K"
        if f == "IQ3_M" and (i < n // 8 or (qs.n_expert == 8 and _use_more_bits(i, n))):
            return "Q4_K"
        if f == "Q3_K_L":
            return "Q4_K" if qs.falcon else "Q5_K"
        if f == "Q4_K_M":
            if qs.falcon:
                if i < n // 16:
                    return "Q6_K"
                return "Q5_K" if _use_more_bits(i, n) else "Q4_K"
            return "Q6_K" if _use_more_bits(i, n) else new
        if i < n // 8 and f in {"IQ4_NL", "IQ4_XS"} and not qs.has_imatrix:
            return "Q5_K"
        if f == "Q5_K_M" and _use_more_bits(i, n):
            return "Q6_K"
        if f == "Q4_K_S" and not qs.falcon and i < n // 8:
            return "Q5_K"
        if f in {"Q4_0", "Q5_0"} and qs.has_imatrix and i < n // 8:
            return "Q4_1" if f == "Q4_0" else "Q5_1"
        return new
    if cat == "attn_output":
        if qs.falcon:
            return "Q4_K" if f == "Q3_K_L" else new
        if qs.n_expert == 8:
            eight = {"Q2_K", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M"}
            eight |= {"IQ3_S", "IQ3_M", "IQ4_XS"}
            return "Q5_K" if f in eight else new
        return {
            "Q2_K": "Q3_K",
            "IQ3_XXS": "IQ3_S",
            "Q3_K_M": "Q4_K",
            "Q3_K_L": "Q5_K",
            "IQ3_M": "Q4_K",
        }.get(f, new)
    return new


def _with_fallback(t: GgufTensor, ggml_type: str) -> str:
    """``tensor_type_fallback``: a row length the block does not divide takes a smaller block."""
    if t.ne0 % GGML_BLOCK[ggml_type][0] == 0:
        return ggml_type
    fallback = _FALLBACK.get(ggml_type, "F16")
    return fallback if t.ne0 % GGML_BLOCK[fallback][0] == 0 else "F16"


def gguf_tensor_types(arch: Architecture, gguf_type: str) -> list[tuple[GgufTensor, str]]:
    """Each tensor with the ggml type ``llama-quantize`` gives it under ``gguf_type``.

    Tensors are visited in the name order of the loader's map (``blk.0``, ``blk.1``, ``blk.10``…);
    only the counters of ``attn_v``-like and ``ffn_down`` tensors depend on it, and since every such
    tensor of a model has the same shape the totals do not. Importance matrices are assumed for the
    IQ types (llama-quantize requires one for IQ1/IQ2/IQ3_XXS) and not for K- and legacy types.
    """
    tensors = gguf_tensors(arch)
    base = _DEFAULT_TYPE[gguf_type]
    qs = _QuantState(
        ftype=gguf_type,
        n_layer=arch.num_layers,
        n_gqa=max(1, arch.num_attention_heads // arch.num_kv_heads),
        n_expert=arch.num_experts,
        falcon=arch.model_type == "falcon",
        is_70b=arch.model_type == "llama" and arch.num_layers == 80,
        tied=arch.tie_word_embeddings,
        has_imatrix=gguf_type.startswith("IQ"),
        n_attention_wv=sum(1 for t in tensors if t.category in ("attn_v", "attn_qkv", "attn_kv_b")),
    )
    ordered = sorted(tensors, key=lambda t: t.name)
    chosen: dict[str, str] = {}
    for t in ordered:
        if not t.quantizable:
            chosen[t.name] = "F32"
        elif gguf_type in _FLOAT_FILES:
            chosen[t.name] = base
        else:
            chosen[t.name] = _with_fallback(t, _choose_type(qs, t, base))
    return [(t, chosen[t.name]) for t in tensors]


def tensor_bytes(t: GgufTensor, ggml_type: str) -> int:
    """``elements / block × bytes per block`` (ggml_nbytes of a contiguous tensor)."""
    block, size = GGML_BLOCK[ggml_type]
    return t.rows * (t.ne0 // block) * size


def cache_row_bytes(cache_type: str, width: int) -> int:
    """``ggml_row_size``: quantized caches use ggml's blocks (q8_0 is 34 bytes per 32 values)."""
    block, size = GGML_BLOCK[cache_type.upper()]
    return -(-width // block) * size


# --- buffers ----------------------------------------------------------------------------------
def _pad(value: int, to: int) -> int:
    return -(-value // to) * to


def kv_cells(arch: Architecture, options: LlamaCppOptions) -> tuple[int, int]:
    """Cells of the full-attention cache and of the sliding-window cache.

    ``n_ctx`` is padded to 256 (llama-context.cpp); ``llama_kv_cache_iswa`` gives sliding layers
    ``pad(min(n_ctx, n_swa · n_seq + n_ubatch), 256)`` cells with the unified cache (the window of
    every parallel sequence plus one micro-batch), or ``n_ctx`` with ``--swa-full``.
    """
    full = _pad(options.n_ctx, 256)
    if arch.model_type not in _ISWA_MODEL_TYPES or not arch.sliding_window:
        return full, 0
    if options.swa_full:
        return full, full
    return full, _pad(min(full, arch.sliding_window * options.n_parallel + options.n_ubatch), 256)


def _kv_layer_bytes(
    arch: Architecture, options: LlamaCppOptions, cells: int, sliding: bool = False
) -> int:
    """K and V of one attention layer; MLA keeps its latent (kv_lora_rank + rope) as K and the
    latent as V, as llama.cpp's deepseek2 graph caches them (llama-model.cpp). A sliding-window
    layer's cache is F16 whatever the cache types (llama.cpp PR #21277)."""
    if arch.attention_kind == "mla":
        k_width = (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0)
        v_width = arch.kv_lora_rank or 0
    else:
        k_width = arch.num_kv_heads * arch.head_dim
        v_width = arch.num_kv_heads * arch.v_head_dim
    type_k = "f16" if sliding else options.cache_type_k
    type_v = "f16" if sliding else options.cache_type_v
    k = cache_row_bytes(type_k, k_width) * cells
    v = cache_row_bytes(type_v, v_width) * cells
    return k + v


def _gpu_layer_start(arch: Architecture, options: LlamaCppOptions) -> int:
    """First repeating layer on the GPU: ``max(n_layer + 1 - ngl, 0)`` (llama-model.cpp); the
    output layer (index n_layer) is on the GPU whenever ``ngl ≥ 1``."""
    ngl = arch.num_layers + 1 if options.n_gpu_layers is None else options.n_gpu_layers
    return max(arch.num_layers + 1 - ngl, 0)


def model_buffer(
    arch: Architecture, typed: list[tuple[GgufTensor, str]], options: LlamaCppOptions
) -> DeviceBytes:
    """Weights by device: token embeddings always on the host (read with ``get_rows``); layers from
    ``_gpu_layer_start`` on, the final norm and the output head on the GPU. A tied output head is a
    duplicate of the embedding table loaded beside the GPU layers."""
    start = _gpu_layer_start(arch, options)
    output_on_gpu = arch.num_layers >= start and options.n_gpu_layers != 0
    gpu = host = 0
    embd_bytes = 0
    for t, ggml_type in typed:
        size = tensor_bytes(t, ggml_type)
        if t.category == "token_embd" or t.name == "position_embd":
            host += size
            embd_bytes = size if t.category == "token_embd" else embd_bytes
        elif t.layer is None:
            if output_on_gpu:
                gpu += size
            else:
                host += size
        elif t.layer >= start and options.n_gpu_layers != 0:
            gpu += size
        else:
            host += size
    if arch.tie_word_embeddings and output_on_gpu:
        gpu += embd_bytes
        # on the host the tied head reads the embedding table itself
    return DeviceBytes(gpu=gpu, host=host)


def kv_buffer(arch: Architecture, options: LlamaCppOptions) -> DeviceBytes:
    """Per attention layer ``row_size(type_k, n_embd_k_gqa) · cells + row_size(type_v, …) · cells``,
    on the device of the layer (llama-kv-cache.cpp, offload_kqv on). Recurrent layers of a hybrid
    and layers that reuse an earlier layer's KV keep none."""
    full, swa = kv_cells(arch, options)
    start = _gpu_layer_start(arch, options)
    gpu = host = 0
    for il in range(arch.num_layers):
        if not arch.keeps_kv(il):
            continue
        sliding = bool(swa) and bool(arch.layer_types) and arch.layer_types[il] == "sliding"
        size = _kv_layer_bytes(arch, options, swa if sliding else full, sliding)
        if il >= start and options.n_gpu_layers != 0:
            gpu += size
        else:
            host += size
    return DeviceBytes(gpu=gpu, host=host)


def recurrent_state_elements(state: RecurrentState) -> int:
    """``n_embd_r + n_embd_s`` of one layer (llama-hparams.cpp): the convolution state without its
    oldest column (``d_conv - 1`` of ``d_conv`` taps, LFM2's ``L_cache - 1``) plus the recurrent
    state (Mamba's ``d_state · d_inner``, a delta-rule layer's heads × key dim × value dim)."""
    conv = state.conv_elements
    if state.conv_kernel:
        conv = conv // state.conv_kernel * (state.conv_kernel - 1)
    return conv + state.state_elements


def recurrent_cells(options: LlamaCppOptions) -> int:
    """Sequences the recurrent memory holds: ``max(1, n_seq_max)``, i.e. one per slot."""
    return max(1, options.n_parallel)


def _layer_state_elements(arch: Architecture, il: int) -> int:
    """F32 elements one cell of layer ``il`` keeps; 0 on layers the recurrent memory skips."""
    elements = 0
    kind = arch.mixer_kind(il)
    if kind not in ("attention", "none"):
        elements += recurrent_state_elements(arch.recurrent_state(kind))
    if arch.parallel_recurrent is not None:
        elements += recurrent_state_elements(arch.parallel_recurrent)
    return elements


def recurrent_layer_count(arch: Architecture) -> int:
    """Layers the recurrent memory keeps a state for (the hybrid's ``filter_recr``)."""
    return sum(1 for il in range(arch.num_layers) if _layer_state_elements(arch, il))


def recurrent_buffer(arch: Architecture, options: LlamaCppOptions) -> DeviceBytes:
    """The RS buffer: F32 ``n_embd_r + n_embd_s`` per cell (one per ``--parallel`` slot) and
    recurrent layer, on the device of the layer like the KV cache (llama-memory-recurrent.cpp);
    a recurrent mixer running beside attention (Falcon-H1) adds its state to every layer."""
    start = _gpu_layer_start(arch, options)
    cells = recurrent_cells(options)
    gpu = host = 0
    for il in range(arch.num_layers):
        size = 4 * _layer_state_elements(arch, il) * cells
        if il >= start and options.n_gpu_layers != 0:
            gpu += size
        else:
            host += size
    return DeviceBytes(gpu=gpu, host=host)


def compute_buffer(arch: Architecture, options: LlamaCppOptions) -> DeviceBytes:
    """The reserved worst-case graph for ``n_ub = min(n_ctx, n_ubatch)`` tokens over all cells.

    GPU: the largest of three phases, each a set of f32 tensors alive at once —
    attention without flash attention: scores ``n_kv · n_ub · n_head`` plus the mask copy and four
    ``n_embd``-wide activations; with flash attention only the f16 mask and those activations;
    feed-forward: two intermediate-wide tensors (gate/up, or the routed experts' ``k ·
    moe_intermediate``) and two residuals; output head: logits for every token of the micro-batch
    (``n_vocab · n_ub``) and the final norm. Host (``CUDA_Host compute buffer``): the input
    embeddings (``n_embd · n_ub`` f32) and the KQ mask (f32, or f16 with flash attention).
    """
    full, _swa = kv_cells(arch, options)
    n_ub = min(_pad(options.n_ctx, 256), options.n_ubatch)
    h = arch.hidden_size
    mask_bytes = (2 if options.flash_attention else 4) * full * _pad(n_ub, 64)
    acts = 4 * 4 * n_ub * h
    if options.flash_attention:
        attention = mask_bytes + acts
    else:
        attention = 4 * full * n_ub * arch.num_attention_heads + mask_bytes + acts
    if arch.is_moe:
        routed = arch.experts_per_token * arch.moe_intermediate_size
        feed_forward = 4 * n_ub * (2 * routed + arch.num_experts + 2 * h)
    else:
        feed_forward = 4 * n_ub * (2 * arch.intermediate_size + 2 * h)
    output = 4 * n_ub * (arch.vocab_size + h)
    device = max(attention, feed_forward, output)
    host = 4 * n_ub * h + mask_bytes
    if options.n_gpu_layers == 0:
        # CPU only: one CPU compute buffer holds the graph and its inputs.
        return DeviceBytes(gpu=0, host=device)
    return DeviceBytes(gpu=device, host=host)


def estimate_llama_cpp(
    arch: Architecture,
    options: LlamaCppOptions,
    *,
    typed: list[tuple[GgufTensor, str]] | None = None,
) -> LlamaCppResult:
    """All of llama.cpp's load-time buffers for ``arch`` under ``options``. ``typed`` (the file's
    tensor types, ``gguf_tensor_types``) may be passed in by searches that try many contexts or
    layer counts for one file: it is most of the cost and depends only on the file type."""
    if typed is None:
        typed = gguf_tensor_types(arch, options.gguf_type)
    file_bytes = sum(tensor_bytes(t, ggml_type) for t, ggml_type in typed)
    elements = sum(t.elements for t, _ in typed)
    counts: dict[str, int] = {}
    for _t, ggml_type in typed:
        counts[ggml_type] = counts.get(ggml_type, 0) + 1
    full, swa = kv_cells(arch, options)
    start = _gpu_layer_start(arch, options)
    gpu_layers = 0 if options.n_gpu_layers == 0 else arch.num_layers + 1 - start
    return LlamaCppResult(
        gguf_type=options.gguf_type,
        gguf_file_bytes=file_bytes,
        bits_per_weight=round(8 * file_bytes / elements, 3),
        tensor_types=counts,
        n_ctx_padded=full,
        kv_cells_full=full,
        kv_cells_swa=swa,
        gpu_layers=gpu_layers,
        model_buffer=model_buffer(arch, typed, options),
        kv_buffer=kv_buffer(arch, options),
        recurrent_buffer=recurrent_buffer(arch, options),
        compute_buffer=compute_buffer(arch, options),
        output_buffer_bytes=4 * arch.vocab_size * options.n_parallel,
    )


# --- several GPUs: the layer split ----------------------------------------------------------
# ggml-backend.h: the scheduler keeps this many copies of each split's inputs when it runs the
# devices as a pipeline (llama-context.cpp: several devices, every layer offloaded, -sm layer,
# the KV cache offloaded, no tensor overrides).
GGML_SCHED_MAX_COPIES = 4


def layer_split(slots: int, devices: int) -> list[int]:
    """How many of ``slots`` offloaded layer slots (repeating layers, then the output layer) each
    of ``devices`` equal GPUs gets under ``-sm layer`` (llama.cpp's default with several GPUs)
    without ``--tensor-split``: llama-model.cpp ``load_tensors`` takes each device's free memory
    as its share, cumulates and normalises them into split points (equal cards: 1/n, 2/n, …) and
    puts slot ``i`` on the first device whose point is above ``i / slots``, i.e. device
    ``⌊i · n / slots⌋``."""
    counts = [0] * devices
    for slot in range(slots):
        counts[slot * devices // slots] += 1
    return counts


def gpu_slot_bytes(
    arch: Architecture, typed: list[tuple[GgufTensor, str]], options: LlamaCppOptions
) -> list[int]:
    """GPU bytes of each layer slot from the first offloaded one on: the layer's tensors, its KV
    cache and recurrent state (on the device of the layer, as ``kv_buffer`` and
    ``recurrent_buffer`` place them), and last the output layer (final norm, output head and a
    tied head's copy of the embeddings, as ``model_buffer`` places them)."""
    start = _gpu_layer_start(arch, options)
    slots = [0] * (arch.num_layers + 1)
    embd_bytes = 0
    for t, ggml_type in typed:
        size = tensor_bytes(t, ggml_type)
        if t.category == "token_embd" or t.name == "position_embd":
            embd_bytes = size if t.category == "token_embd" else embd_bytes
        elif t.layer is None:
            slots[arch.num_layers] += size
        else:
            slots[t.layer] += size
    if arch.tie_word_embeddings:
        slots[arch.num_layers] += embd_bytes
    full, swa = kv_cells(arch, options)
    cells = recurrent_cells(options)
    for il in range(arch.num_layers):
        if arch.keeps_kv(il):
            sliding = bool(swa) and bool(arch.layer_types) and arch.layer_types[il] == "sliding"
            slots[il] += _kv_layer_bytes(arch, options, swa if sliding else full, sliding)
        slots[il] += 4 * _layer_state_elements(arch, il) * cells
    return slots[start:]


def pipeline_input_bytes(arch: Architecture, options: LlamaCppOptions) -> int:
    """The inputs of one device's part of the graph: the hidden state it receives
    (``n_embd · n_ub`` f32) and its copy of the KQ mask (f16 with flash attention, else f32),
    as ``compute_buffer`` counts them."""
    full, _swa = kv_cells(arch, options)
    n_ub = min(_pad(options.n_ctx, 256), options.n_ubatch)
    mask_bytes = (2 if options.flash_attention else 4) * full * _pad(n_ub, 64)
    return 4 * n_ub * arch.hidden_size + mask_bytes


def layer_split_gpu_bytes(
    arch: Architecture,
    options: LlamaCppOptions,
    devices: int,
    *,
    typed: list[tuple[GgufTensor, str]] | None = None,
    slots: list[int] | None = None,
) -> list[int]:
    """Each GPU's buffers when llama.cpp splits the offloaded layers over ``devices`` equal GPUs
    (``layer_split``): the weights, KV cache and recurrent states of its layers, and the compute
    buffer, which every device reserves for the whole graph (ggml_backend_sched reserves the
    worst case per backend; ik_llama.cpp PR #235's two-4090 log: 1166.01 and 1166.02 MiB). With
    every layer offloaded the devices run as a pipeline and keep ``GGML_SCHED_MAX_COPIES`` copies
    of their inputs (llama-context.cpp; Unsloth PR #7637 traced 4 GiB per device at a 1M context
    to them). Not counted: the CUDA context every device also holds. ``typed``: as for
    ``estimate_llama_cpp``; ``slots``: ``gpu_slot_bytes``, for a search over device counts."""
    if options.n_gpu_layers == 0:
        return [0] * devices
    if slots is None:
        typed = typed if typed is not None else gguf_tensor_types(arch, options.gguf_type)
        slots = gpu_slot_bytes(arch, typed, options)
    compute = compute_buffer(arch, options).gpu
    pipeline = devices > 1 and _gpu_layer_start(arch, options) == 0
    inputs = (GGML_SCHED_MAX_COPIES - 1) * pipeline_input_bytes(arch, options) if pipeline else 0
    totals, first = [], 0
    for count in layer_split(len(slots), devices):
        held = sum(slots[first : first + count])
        first += count
        totals.append(held + compute + inputs if count else 0)
    return totals


# --- levers -----------------------------------------------------------------------------------
def most_gpu_layers_that_fit(
    arch: Architecture,
    options: LlamaCppOptions,
    gpu_memory_bytes: int,
    *,
    typed: list[tuple[GgufTensor, str]] | None = None,
) -> int:
    """The largest ``-ngl`` whose GPU buffers fit in ``gpu_memory_bytes`` (0 if none does).
    GPU bytes only grow with ``-ngl``, so a bisection over 0..layers+1 finds it. ``typed``: as
    for ``estimate_llama_cpp``."""
    if typed is None:
        typed = gguf_tensor_types(arch, options.gguf_type)

    def fits(ngl: int) -> bool:
        trial = options.model_copy(update={"n_gpu_layers": ngl})
        return estimate_llama_cpp(arch, trial, typed=typed).gpu_bytes <= gpu_memory_bytes

    if not fits(0):
        return 0
    low, high = 0, arch.num_layers + 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def longest_context_full_offload(
    arch: Architecture,
    options: LlamaCppOptions,
    gpu_memory_bytes: int,
    limit: int = 1 << 21,
    *,
    typed: list[tuple[GgufTensor, str]] | None = None,
) -> int:
    """The largest ``n_ctx`` (a multiple of 256) that fits fully offloaded; 0 if none does.
    ``typed``: as for ``estimate_llama_cpp``."""
    full = options.model_copy(update={"n_gpu_layers": None})
    if typed is None:
        typed = gguf_tensor_types(arch, options.gguf_type)

    def fits(n_ctx: int) -> bool:
        trial = full.model_copy(update={"n_ctx": n_ctx})
        return estimate_llama_cpp(arch, trial, typed=typed).gpu_bytes <= gpu_memory_bytes

    if not fits(256):
        return 0
    low, high = 1, limit // 256
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid * 256):
            low = mid
        else:
            high = mid - 1
    return low * 256

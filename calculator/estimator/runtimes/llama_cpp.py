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
- ``src/llama-kv-cache.cpp``, ``src/llama-kv-cache-iswa.cpp``, ``src/llama-kv-cache-dsa.cpp``,
  ``src/llama-context.cpp`` and ``src/llama-model.cpp`` ``create_memory`` @
  0c1e57098bba43ac29e6e3b677cdceebdd22334f (the llama.cpp that llama-cpp-python 0.3.36 ships): one K
  tensor of ``ggml_row_size(type_k, n_embd_k_gqa(il)) × kv_size × n_stream`` per attention layer and
  one V tensor likewise, except under MLA (``is_mla``), where V is a view of the cached latent and
  has no tensor of its own. ``n_ctx`` is padded to 256; with one unified stream (``-kvu``)
  ``kv_size = n_ctx``, else each of the ``n_seq`` streams holds ``pad(n_ctx / n_seq, 256)`` cells.
  Sliding-window layers get ``pad(min(kv_size, n_swa · (n_seq if unified else 1) + n_ubatch),
  256)`` cells per stream unless ``--swa-full``, in the cache types ``-ctk``/``-ctv`` name (PR
  #21277 kept them F16; #21332 reverted it a day later). DeepSeek Sparse Attention adds an indexer
  key cache: one ``index_head_dim``-wide key (one head, ``type_k``) per cell and indexed layer.
  Gemma 3n/4 layers past ``n_layer_kv_from_start`` reuse an earlier layer's cache.
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

import re
import struct
from array import array
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from math import gcd
from typing import Annotated, Generic, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from calculator.estimator.architecture import Architecture, MixerKind, RecurrentState

MIB = 1 << 20

GgufType = Literal[
    "F32",
    "BF16",
    "F16",
    "Q8_0",
    "MXFP4",
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
    "MXFP4": "MXFP4",
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
# The model types whose llama.cpp architecture sets a sliding-window type when the file has a
# window (``swa_type = LLAMA_SWA_TYPE_*`` in src/models/*.cpp @ 0c1e570: gemma2, gemma3, gemma3n,
# gemma4, openai-moe, cohere2, cohere2moe, llama4 (chunked), exaone4, exaone-moe, olmo2 (OLMo 3),
# afmoe, mimo2): those give sliding layers a window-sized cache. Mistral's config window is
# ignored by llama.cpp's llama architecture.
_ISWA_MODEL_TYPES = frozenset(
    {
        *("gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text"),
        *("gpt_oss", "cohere2", "cohere2_moe", "llama4", "llama4_text", "exaone4", "exaone_moe"),
        *("olmo3", "afmoe", "mimo_v2_flash"),
    }
)
# gpt-oss GGUFs keep the routed experts in MXFP4 whatever the file type: convert_hf_to_gguf.py
# (GptOssModel) writes the checkpoint's MXFP4 blocks as they are, and llama-quantize does not
# requantize a quantized tensor without --allow-requantize (llama-quant.cpp @ 0c1e570).
_MXFP4_EXPERTS = frozenset({"gpt_oss"})
# Families whose GGUF converter keeps Q/K/V fused in one ``attn_qkv`` tensor (convert_hf_to_gguf.py).
_FUSED_QKV = frozenset({"gpt2", "gpt_neox", "falcon", "phi3"})
_LOADS_SHARED_KV = frozenset({"gemma3n", "gemma3n_text"})
# Loaders that create the tied output head before token_embd (src/models/gemma3n.cpp,
# gemma4.cpp): the duplicate finds no tensor of that name in the buffer's context yet, so the
# host holds the table twice when the output layer stays there (llama-model-loader.cpp
# create_tensor, TENSOR_DUPLICATED).
_TIED_HEAD_FIRST = frozenset({"gemma3n", "gemma3n_text", "gemma4", "gemma4_text"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


SplitMode = Literal["layer", "none"]
# Devices one llama.cpp process may split over (ggml's GGML_CUDA_MAX_DEVICES is 16).
MAX_DEVICES = 16
# common/common.h LLM_FFN_EXPS_REGEX: the routed-expert tensors --cpu-moe and --n-cpu-moe move.
FFN_EXPS_PATTERN = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"


def _repeats_a_repeat(pattern: str) -> bool:
    """Whether a quantified group holds a quantifier, a group or an alternation ("(a+)+",
    "((ab)*)+", "(a|aa)+"): the shapes that make a backtracking regex take exponential time. Tensor names are short, but a
    pattern is user input, and Python's ``re`` has no time limit."""
    starts: list[int] = []
    escaped = False
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "(":
            starts.append(index)
        elif char == ")" and starts:
            start = starts.pop()
            inner = pattern[start + 1 : index].removeprefix("?:")
            after = pattern[index + 1 : index + 2]
            if after and after in "*+{" and any(c in inner for c in "*+?{(|"):
                return True
    return False


class TensorOverride(BaseModel):
    """One ``-ot PATTERN=BUFFER`` entry: every tensor whose name the pattern matches anywhere
    (``std::regex_search``, llama-model-loader.cpp ``select_buft``; the first matching entry
    wins) loads into that buffer. Only ``CPU`` is modelled: the tensor stays in system RAM."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str = Field(min_length=1, max_length=300, description="A regex on tensor names")
    buffer: Literal["CPU"] = Field(default="CPU", description="Where matching tensors load")

    @model_validator(mode="after")
    def _pattern_is_safe(self) -> TensorOverride:
        if _repeats_a_repeat(self.pattern):
            raise ValueError(f"the pattern {self.pattern!r} repeats a repeated group")
        try:
            re.compile(self.pattern)
        except re.error as error:
            raise ValueError(f"the pattern {self.pattern!r} is not a regex: {error}") from None
        return self


class OverrideError(ValueError):
    """A ``-ot`` entry that cannot be read: ``kind`` is ``syntax`` (no ``=BUFFER``), ``buffer``
    (not CPU), ``regex`` (not a regex) or ``nested`` (a repeated group repeated)."""

    def __init__(self, kind: str, entry: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.entry = kind, entry


def parse_override_tensors(text: str) -> tuple[TensorOverride, ...]:
    """``-ot``'s own syntax (common/arg.cpp ``parse_tensor_buffer_overrides``): entries split on
    commas, each ``PATTERN=BUFFER`` split at its first ``=``. Several ``-ot`` flags add up, so
    entries may also be on separate lines. Raises OverrideError naming what is wrong."""
    entries = []
    for line in text.replace(";", "\n").splitlines():
        for item in line.split(","):
            item = item.strip().strip("\"'")
            if item.startswith("-ot ") or item.startswith("--override-tensor "):
                item = item.split(" ", 1)[1].strip().strip("\"'")
            if not item:
                continue
            pattern, equals, buffer = item.partition("=")
            if not equals or not pattern.strip():
                raise OverrideError("syntax", item, f"{item!r} is not PATTERN=BUFFER")
            if buffer.strip() != "CPU":
                raise OverrideError("buffer", item, f"{item!r}: only =CPU is modelled")
            pattern = pattern.strip()
            if _repeats_a_repeat(pattern):
                raise OverrideError("nested", item, f"{item!r} repeats a repeated group")
            try:
                re.compile(pattern)
            except re.error as error:
                raise OverrideError("regex", item, f"{item!r}: {error}") from None
            entries.append(TensorOverride(pattern=pattern[:300]))
    return tuple(entries)


class LlamaCppOptions(_Frozen):
    """What ``llama-server`` takes; defaults are llama-server's own (``common/common.h``)."""

    gguf_type: GgufType | None = Field(
        default=None, description="None: the model's usual file (MXFP4 for gpt-oss, else Q4_K_M)"
    )
    n_ctx: int = Field(default=4096, ge=1, le=10_000_000, description="-c, all sequences together")
    n_batch: int = Field(default=2048, ge=1, le=1_000_000, description="-b")
    n_ubatch: int = Field(default=512, ge=1, le=1_000_000, description="-ub")
    n_parallel: int = Field(default=4, ge=1, le=4096, description="-np (llama-server slots)")
    flash_attention: bool = Field(default=True, description="-fa (auto: on where supported)")
    cache_type_k: CacheType = "f16"
    cache_type_v: CacheType = "f16"
    n_gpu_layers: int | None = Field(default=None, ge=0, description="-ngl; None = all")
    swa_full: bool = Field(default=False, description="--swa-full: full-size sliding caches")
    n_cpu_moe: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="--n-cpu-moe: the routed experts of the first N layers stay in system RAM",
    )
    cpu_moe: bool = Field(default=False, description="--cpu-moe: every routed expert in RAM")
    override_tensors: tuple[TensorOverride, ...] = Field(
        default=(),
        max_length=256,
        description="-ot PATTERN=CPU entries: the tensors whose names match stay in system RAM "
        "(exps=CPU keeps every routed expert there, blk\\.(2[0-9])\\.ffn_.*=CPU the feed-forward "
        "tensors of layers 20-29)",
    )
    kv_unified: bool = Field(
        default=False,
        description="-kvu: one KV stream for all slots (llama-server turns it on itself only "
        "when -np is left at auto)",
    )
    split_mode: SplitMode = Field(
        default="layer",
        description="-sm with several GPUs: layer (each GPU a slice of the layers, llama.cpp's "
        "default) or none (every offloaded layer on --main-gpu)",
    )
    tensor_split: tuple[Annotated[float, Field(ge=0, le=1e6)], ...] | None = Field(
        default=None,
        max_length=MAX_DEVICES,
        description="-ts: each GPU's share of the layers; None: in proportion to the free memory "
        "of each (device_memory_bytes), equal shares when that is not given",
    )
    device_memory_bytes: tuple[Annotated[int, Field(gt=0)], ...] | None = Field(
        default=None,
        max_length=MAX_DEVICES,
        description="Free memory of each GPU, which llama.cpp splits the layers by when -ts is "
        "not given (the page and the API fill it from the chosen cards)",
    )
    main_gpu: int = Field(default=0, ge=0, lt=MAX_DEVICES, description="-mg (split mode none)")

    @model_validator(mode="after")
    def _split_is_a_split(self) -> LlamaCppOptions:
        if self.tensor_split is not None and not any(self.tensor_split):
            raise ValueError("tensor_split needs one share above 0 (all 0: leave it out)")
        return self

    @property
    def has_tensor_overrides(self) -> bool:
        """Whether any tensor is placed by an override (``--cpu-moe``, ``--n-cpu-moe`` and
        ``-ot`` all push one): llama.cpp then runs no pipeline and ``--fit`` changes nothing."""
        return bool(self.cpu_moe or self.n_cpu_moe or self.override_tensors)

    def override_patterns(self, arch: Architecture) -> tuple[str, ...]:
        """Every override as llama.cpp lists them: ``-ot`` entries, then ``--cpu-moe`` or one
        ``blk\\.<i>`` + LLM_FFN_EXPS_REGEX per layer of ``--n-cpu-moe`` (common/arg.cpp)."""
        patterns = [entry.pattern for entry in self.override_tensors]
        if self.cpu_moe:
            patterns.append(FFN_EXPS_PATTERN)
        else:
            n = min(self.n_cpu_moe, arch.num_layers)
            patterns.extend(rf"blk\.{il}{FFN_EXPS_PATTERN}" for il in range(n))
        return tuple(patterns)

    def cpu_expert_layers(self, arch: Architecture) -> int:
        """How many leading layers keep their routed experts on the host: all with --cpu-moe,
        the first N with --n-cpu-moe N (common/arg.cpp: one ``blk\\.<i>\\.ffn_(up|down|gate|
        gate_up)_(ch|)exps`` → CPU override per layer i < N)."""
        if not arch.is_moe:
            return 0
        return arch.num_layers if self.cpu_moe else min(self.n_cpu_moe, arch.num_layers)

    def file_type(self, arch: Architecture) -> str:
        """The GGUF file type: the one asked for, else the model's usual one."""
        if self.gguf_type is not None:
            return self.gguf_type
        return "MXFP4" if arch.model_type in _MXFP4_EXPERTS else "Q4_K_M"

    def for_model(self, arch: Architecture) -> LlamaCppOptions:
        """These options with the file type resolved for ``arch``."""
        if self.gguf_type is not None:
            return self
        return self.model_copy(update={"gguf_type": self.file_type(arch)})


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


class LlamaCppDevice(_Frozen):
    """One GPU's buffers, as llama.cpp prints them per device (``CUDA0 model buffer size`` …)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field(description="The backend's name for it: CUDA0, CUDA1, …")
    layers: int = Field(ge=0, description="Layer slots it holds, the output layer counting as one.")
    model: int = Field(ge=0, description="Its model buffer: the tensors of its layers.")
    kv: int = Field(ge=0, description="Its KV buffer: its layers' K and V.")
    recurrent: int = Field(default=0, ge=0, description="Its RS buffer: its layers' states.")
    compute: int = Field(
        ge=0, description="Its compute buffer, the pipeline's copies of its inputs included."
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        return self.model + self.kv + self.recurrent + self.compute


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
    expert_bytes: DeviceBytes = Field(
        default=DeviceBytes(gpu=0, host=0),
        description="The routed-expert tensors within model_buffer, by device (a decode step "
        "reads only the experts it routes to).",
    )
    kv_buffer: DeviceBytes
    recurrent_buffer: DeviceBytes = Field(
        description="Conv and recurrent states of hybrid/recurrent layers, F32, one per slot "
        "(llama_memory_recurrent's RS buffer)."
    )
    compute_buffer: DeviceBytes = Field(
        description="GPU: every device's compute buffer together (each reserves its own)."
    )
    output_buffer_bytes: int = Field(description="Host logits buffer (CUDA_Host output buffer).")
    devices: tuple[LlamaCppDevice, ...] = Field(
        default=(),
        description="Per GPU (none when every layer stays on the CPU): where the GPU parts of the "
        "model, KV and compute buffers above lie.",
    )

    def binding_device(self, memory_bytes: Sequence[int] | None = None) -> LlamaCppDevice | None:
        """The GPU that runs out first: the least room left of ``memory_bytes`` (one figure per
        device), else the fullest."""
        if not self.devices:
            return None
        if memory_bytes is None or len(memory_bytes) != len(self.devices):
            return max(self.devices, key=lambda device: device.total)
        pairs = zip(self.devices, memory_bytes, strict=True)
        return max(pairs, key=lambda pair: pair[0].total - pair[1])[0]

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
    "unquantized",  # a matrix llama-quantize leaves in the source file's type
]


# The tensors llama-quantize counts with i_attention_wv.
_ATTN_V_LIKE = frozenset({"attn_v", "attn_qkv", "attn_kv_b"})


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of the file: ``ne0`` is the row length that must divide by the block size."""

    name: str
    category: Category
    layer: int | None
    ne0: int
    rows: int
    quantizable: bool
    expert: bool = False  # a 3-D tensor of routed experts (``*_exps``)

    @property
    def elements(self) -> int:
        return self.ne0 * self.rows


class _Shape(NamedTuple):
    """A tensor before it is given a layer: ``blk.N.<name>`` has this shape in every block of one
    structure, so a file is a few such templates repeated rather than one object per tensor."""

    name: str
    category: Category
    ne0: int
    rows: int
    quantizable: bool
    expert: bool = False

    @property
    def elements(self) -> int:
        return self.ne0 * self.rows


# What a block's tensors depend on: its mixer ("attention", a recurrent kind or "none"), its
# MLP ("dense", "moe" or "none") and whether it reuses an earlier layer's keys and values.
_Structure = tuple[str, str, bool]


class _Shapes(list[_Shape]):
    """A block's tensors as they are added."""

    def add(
        self,
        name: str,
        cat: Category,
        ne0: int,
        rows: int,
        quantizable: bool = True,
        expert: bool = False,
    ) -> None:
        self.append(_Shape(name, cat, ne0, rows, quantizable, expert))

    def matrix_and_rest(self, name: str, elements: int, width: int) -> None:
        """``elements`` as one ``width``-wide quantizable matrix and an F32 remainder."""
        rows, rest = divmod(max(elements, 0), width)
        if rows:
            self.add(name, "other", width, rows)
        if rest:
            self.add(f"{name}_small", "other", rest, 1, False)


def _block_shapes(arch: Architecture, structure: _Structure) -> tuple[_Shape, ...]:
    """The tensors of one block as ``convert_hf_to_gguf.py`` names them (``blk.N.*``): a block
    depends on its index only through its ``_Structure``. A recurrent mixer (Mamba, Gated
    DeltaNet, short convolutions) is its projections, quantized like any matrix, and its
    convolution kernel and small vectors, which llama-quantize leaves in F32 (``ssm_conv1d``,
    1-D tensors)."""
    mixer, mlp_kind, reuses_kv = structure
    h = arch.hidden_size
    out = _Shapes()
    norms = arch.pre_norms_per_layer + arch.post_norms_per_layer
    norm_width = 2 * h if arch.norm_kind == "layer" else h
    if norms:
        out.add("norms", "other", norm_width * norms, 1, False)
    if mixer == "attention":
        params = arch.attention_params()
        if reuses_kv:
            params -= arch.shared_kv_saving()
        out.extend(_attention_shapes(arch, reuses_kv, params))
    elif mixer != "none":
        out.extend(_recurrent_shapes(arch.recurrent_state(mixer), h))  # type: ignore[arg-type]
    if arch.parallel_recurrent is not None:
        out.extend(_recurrent_shapes(arch.parallel_recurrent, h))
    before_mlp = len(out)
    if mlp_kind == "moe":
        out.add("ffn_gate_inp", "other", h, arch.num_experts, False)
        width = arch.expert_width or h
        _mlp_shapes(arch, out, "_exps", arch.moe_intermediate_size, arch.num_experts, width)
        if arch.expert_width:
            # A latent MoE projects hidden → latent before the experts and back after.
            out.add("ffn_latent", "other", h, 2 * arch.expert_width)
        if arch.shared_expert_intermediate_size:
            _mlp_shapes(arch, out, "_shexp", arch.shared_expert_intermediate_size, 1)
        if arch.expert_bias or arch.router_bias:
            bias = arch.num_experts if arch.router_bias else 0
            if arch.expert_bias:
                bias += arch.num_experts * (
                    (2 if arch.mlp_gated else 1) * arch.moe_intermediate_size + width
                )
            out.add("ffn_bias", "other", bias, 1, False)
    elif mlp_kind == "dense":
        _mlp_shapes(arch, out, "", arch.intermediate_size, 1)
        if arch.mlp_bias:
            bias = (2 if arch.mlp_gated else 1) * arch.intermediate_size + h
            out.add("ffn_bias", "other", bias, 1, False)
    if mlp_kind != "none":
        # What the family's exact count has beyond these (a shared-expert gate, biases).
        params = arch.moe_params() if mlp_kind == "moe" else arch.dense_mlp_params()
        counted = sum(shape.elements for shape in out[before_mlp:])
        out.matrix_and_rest("ffn_extra", params - counted, h)
    # Parameters outside the shared per-layer layout (per-layer projections, MTP layers,
    # indexers), spread over the blocks.
    quantized, unquantized = _spread_params(arch)
    out.matrix_and_rest("extra", quantized // arch.num_layers, h)
    if unquantized // (arch.num_layers * h):
        out.add("extra_unquantized", "unquantized", h, unquantized // (arch.num_layers * h))
    # _layer_choices ranks the blocks that have an attn_v-like tensor: at most one each.
    assert sum(s.category in _ATTN_V_LIKE for s in out) <= 1
    return tuple(out)


def _mlp_shapes(
    arch: Architecture, out: _Shapes, suffix: str, inter: int, count: int, width: int = 0
) -> None:
    h = width or arch.hidden_size
    up_rows = inter * count
    experts = suffix == "_exps"
    if arch.mlp_gated and arch.model_type == "phi3":
        out.add(f"ffn_up{suffix}", "ffn_up", h, 2 * up_rows)  # gate_up_proj kept fused
    else:
        if arch.mlp_gated:
            out.add(f"ffn_gate{suffix}", "ffn_gate", h, up_rows, expert=experts)
        out.add(f"ffn_up{suffix}", "ffn_up", h, up_rows, expert=experts)
    out.add(f"ffn_down{suffix}", "ffn_down", inter, h * count, expert=experts)


def _recurrent_shapes(state: RecurrentState, h: int) -> _Shapes:
    """A recurrent mixer: its projections, each matrix on its own where the mixer lists them
    (Mamba's ``dt_proj`` is ``dt_rank`` wide, so its row length decides its type), else as one
    ``hidden``-wide matrix; its convolution kernel (as many weights as the convolution state has
    cells) and the rest in F32 (vectors, and Mamba's ``ssm_a``, which is not named ``weight``)."""
    out = _Shapes()
    if state.matrices:
        for i, (width, rows) in enumerate(state.matrices):
            out.add(f"ssm_proj_{i}", "other", width, rows)
        rest = state.params - state.conv_elements - sum(w * r for w, r in state.matrices)
        if rest:
            out.add("ssm_small", "other", rest, 1, False)
    else:
        out.matrix_and_rest("ssm_proj", state.params - state.conv_elements, h)
    if state.conv_elements:
        out.add("ssm_conv1d", "other", state.conv_elements, 1, False)
    return out


def _attention_shapes(arch: Architecture, reuses_kv: bool, params: int) -> _Shapes:
    """One attention block's tensors; a layer reusing another's keys and values has no k/v
    projections. What the family's exact count (``params``) has beyond these tensors (an output
    gate in q_proj, a layout of its own) is one more matrix."""
    h = arch.hidden_size
    out = _Shapes()
    if arch.attention_block_params is not None:
        # A layout of the family's own (DeepSeek V4): its count, as one matrix.
        out.matrix_and_rest("attn", params, h)
        return out
    if arch.attention_kind == "mla":
        heads = arch.num_attention_heads
        kv_rank = arch.kv_lora_rank or 0
        rope = arch.qk_rope_head_dim or 0
        if arch.q_lora_rank:
            out.add("attn_q_a", "other", h, arch.q_lora_rank)
            out.add("attn_q_b", "attn_q", arch.q_lora_rank, heads * arch.head_dim)
            out.add("attn_q_a_norm", "other", arch.q_lora_rank, 1, False)
        else:
            out.add("attn_q", "attn_q", h, heads * arch.head_dim)
        out.add("attn_kv_a_mqa", "other", h, kv_rank + rope)
        out.add("attn_kv_a_norm", "other", kv_rank, 1, False)
        nope = arch.head_dim - rope
        out.add("attn_kv_b", "attn_kv_b", kv_rank, heads * (nope + arch.v_head_dim))
    elif arch.model_type in _FUSED_QKV:
        out.add("attn_qkv", "attn_qkv", h, arch.q_width + arch.kv_width + arch.v_width)
    else:
        out.add("attn_q", "attn_q", h, arch.q_width)
        if not reuses_kv:
            out.add("attn_k", "attn_k", h, arch.kv_width)
            out.add("attn_v", "attn_v", h, arch.v_width)
    out.add("attn_output", "attn_output", arch.attn_out_width, h)
    small = 0
    if arch.qkv_bias:
        small += arch.q_width + (0 if reuses_kv else arch.kv_width + arch.v_width)
    if arch.o_bias:
        small += h
    if arch.qk_norm == "per_head":
        small += (1 if reuses_kv else 2) * arch.head_dim
    elif arch.qk_norm == "full":
        small += arch.q_width + (0 if reuses_kv else arch.kv_width)
    if arch.attention_sinks:
        small += arch.num_attention_heads
    if small:
        out.add("attn_small", "other", small, 1, False)
    out.matrix_and_rest("attn_extra", params - sum(shape.elements for shape in out), h)
    return out


def _spread_params(arch: Architecture) -> tuple[int, int]:
    """``other_params`` less a per-layer embedding table, which is its own tensor: the elements
    llama-quantize quantizes and those it keeps in the source type, spread over the blocks."""
    table = 0
    if arch.per_layer_embedding is not None:
        rows, width = arch.per_layer_embedding
        table = rows * width
    quantized = arch.other_params - table - arch.unquantized_params
    return quantized, arch.unquantized_params


def _embedding_shapes(arch: Architecture) -> tuple[_Shape, ...]:
    """The tables read with ``get_rows``, which llama.cpp keeps on the host: token_embd, a
    per-layer embedding table (quantized as token_embd: ``tensor_name_match_token_embd``) and a
    learned position table."""
    h = arch.hidden_size
    shapes = [_Shape("token_embd", "token_embd", h, arch.vocab_size, True)]
    if arch.per_layer_embedding is not None:
        # n_vocab rows, as the loaders require (src/models/gemma3n.cpp, gemma4.cpp); Gemma 3n's
        # converter pads the table to vocab_size (conversion/gemma.py, Gemma3NModel).
        _rows, width = arch.per_layer_embedding
        shapes.append(_Shape("per_layer_token_embd", "token_embd", width, arch.vocab_size, True))
    if arch.learned_positions:
        shapes.append(_Shape("position_embd", "other", h, arch.learned_positions, False))
    return tuple(shapes)


def _output_shapes(arch: Architecture) -> tuple[_Shape, ...]:
    """The output layer: the final norm and, unless tied to the embeddings, the output head."""
    h = arch.hidden_size
    shapes = []
    if arch.final_norm:
        width = 2 * h if arch.norm_kind == "layer" else h
        shapes.append(_Shape("output_norm", "other", width, 1, False))
    if not arch.tie_word_embeddings:
        shapes.append(_Shape("output", "output", h, arch.vocab_size, True))
    small = arch.vocab_size if arch.lm_head_bias else 0
    # What other_params leaves after spreading it over the blocks (_block_shapes).
    quantized, unquantized = _spread_params(arch)
    small += quantized % arch.num_layers + unquantized % (arch.num_layers * h)
    if small:
        shapes.append(_Shape("output_small", "other", small, 1, False))
    return tuple(shapes)


def _structures(arch: Architecture) -> tuple[_Structure, ...]:
    """The ``_Structure`` of every block, the index tuples read once (``mlp_kinds``). Gemma 3n's
    KV-shared layers keep their k/v projections in the file: the checkpoint has them and
    llama.cpp's gemma3n loader requires them (``create_tensor_qkv`` without
    ``TENSOR_NOT_REQUIRED``), though no layer uses them."""
    shared_from = arch.num_layers - arch.kv_shared_layers
    if arch.model_type in _LOADS_SHARED_KV:
        shared_from = arch.num_layers
    if not (arch.mixer_kinds or arch.kv_shared_layers):
        if not arch.is_moe:
            return (("attention", "dense", False),) * arch.num_layers
        return tuple(("attention", kind, False) for kind in arch.mlp_kinds())
    return tuple(
        (arch.mixer_kind(il), kind, il >= shared_from) for il, kind in enumerate(arch.mlp_kinds())
    )


def gguf_tensors(arch: Architecture) -> list[GgufTensor]:
    """Every tensor of a GGUF conversion of ``arch`` (shapes from the config), in file order."""
    flags = _structures(arch)
    blocks = {structure: _block_shapes(arch, structure) for structure in set(flags)}
    tensors = [
        GgufTensor(s.name, s.category, None, s.ne0, s.rows, s.quantizable)
        for s in _embedding_shapes(arch)
    ]
    for il, moe in enumerate(flags):
        tensors.extend(
            GgufTensor(f"blk.{il}.{s.name}", s.category, il, s.ne0, s.rows, s.quantizable, s.expert)
            for s in blocks[moe]
        )
    tensors.extend(
        GgufTensor(s.name, s.category, None, s.ne0, s.rows, s.quantizable)
        for s in _output_shapes(arch)
    )
    return tensors


# --- per-tensor type choice (llama-quant.cpp) -------------------------------------------------


@dataclass(frozen=True)
class _QuantState:
    """What ``llama_tensor_get_type_impl`` reads of ``quantize_state_impl`` besides its two
    counters, which the callers supply per tensor (``_layer_choices``)."""

    ftype: str
    n_layer: int
    n_gqa: int
    n_expert: int
    falcon: bool
    is_70b: bool
    tied: bool
    has_imatrix: bool
    n_attention_wv: int
    mxfp4_experts: bool
    # Layers with an attn_v-like tensor when not every layer has one (hybrids, shared KV).
    value_layers: tuple[int, ...] | None = None


def _quant_state(arch: Architecture, gguf_type: str) -> _QuantState:
    """Importance matrices are assumed for the IQ types (llama-quantize requires one for
    IQ1/IQ2/IQ3_XXS) and not for K- and legacy types. An attention block has one ``attn_v``-like
    tensor (``attn_v``, fused ``attn_qkv`` or MLA's ``attn_kv_b``), a recurrent block or one
    reusing another's keys and values none; ``i_attention_wv`` counts only those that exist."""
    value_layers: tuple[int, ...] | None = None
    if arch.mixer_kinds or arch.kv_shared_layers:
        value_layers = tuple(
            il
            for il, (mixer, _mlp, reuses) in enumerate(_structures(arch))
            if mixer == "attention"
            and (not reuses or arch.attention_kind == "mla" or arch.model_type in _FUSED_QKV)
        )
    return _QuantState(
        ftype=gguf_type,
        n_layer=arch.num_layers,
        n_gqa=max(1, arch.num_attention_heads // arch.num_kv_heads),
        n_expert=arch.num_experts,
        falcon=arch.model_type == "falcon",
        is_70b=arch.model_type == "llama" and arch.num_layers == 80,
        tied=arch.tie_word_embeddings,
        has_imatrix=gguf_type.startswith("IQ"),
        n_attention_wv=arch.num_layers if value_layers is None else len(value_layers),
        mxfp4_experts=arch.model_type in _MXFP4_EXPERTS,
        value_layers=value_layers,
    )


def _use_more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp ``use_more_bits``: the first and last eighth and every third layer between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _attn_v_type(qs: _QuantState, i: int, new: str) -> str:
    """``llama_tensor_get_type_impl`` for an ``attn_v``-like tensor; ``i`` is its
    ``i_attention_wv``, its place among them in the loader's name order."""
    f = qs.ftype
    if f in _IQ_LOW:
        low = "IQ3_S" if f in {"IQ2_S", "IQ2_M"} else "Q2_K"
        return "Q4_K" if qs.n_gqa >= 4 or qs.n_expert >= 4 else low
    n = qs.n_attention_wv
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
    return new


def _ffn_down_type(qs: _QuantState, i: int, new: str) -> str:
    """``llama_tensor_get_type_impl`` for an ``ffn_down`` tensor of layer ``i`` (llama.cpp reads
    the layer from the name; its ``i_ffn_down`` counter is only a fallback for names without one,
    which a block's tensors never are)."""
    f = qs.ftype
    n = qs.n_layer
    if f in _IQ_LOW:
        low = "IQ3_S" if f in {"IQ2_S", "IQ2_M"} else "Q2_K"
        return low if i < n // 8 else new
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


def _fixed_type(qs: _QuantState, cat: Category, ne0: int, new: str) -> str:
    """``llama_tensor_get_type_impl`` for the tensors whose type does not depend on their layer:
    the output head, token_embd, attn_k, attn_q, attn_output and the rest."""
    f = qs.ftype
    if cat == "output" or (qs.tied and cat == "token_embd"):
        if qs.falcon or ne0 % GGML_BLOCK[new][0]:
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
        if qs.n_expert == 8 and cat == "attn_k":
            return "Q4_K"
        if cat == "attn_output":
            if qs.n_expert == 8:
                return "Q5_K"
            if f in {"IQ1_S", "IQ1_M"}:
                return "IQ2_XXS"
            if f in {"IQ2_S", "IQ2_M"}:
                return "IQ3_S"
        return new
    if cat == "attn_k":
        if qs.n_expert == 8:
            return "Q8_0"
        if f == "IQ3_XXS":
            return "IQ2_S"
        return new
    if cat == "attn_q":
        return "IQ2_S" if f == "IQ3_XXS" else new
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


def _with_fallback(ne0: int, ggml_type: str) -> str:
    """``tensor_type_fallback``: a row length the block does not divide takes a smaller block."""
    if ne0 % GGML_BLOCK[ggml_type][0] == 0:
        return ggml_type
    fallback = _FALLBACK.get(ggml_type, "F16")
    return fallback if ne0 % GGML_BLOCK[fallback][0] == 0 else "F16"


@lru_cache(maxsize=64)
def _name_order(n_layer: int) -> array[int]:
    """Each block's place in the loader's name order, in which ``i_attention_wv`` counts: names
    compare as strings, so ``blk.1.*`` < ``blk.10.*`` < ``blk.100.*`` < ``blk.11.*`` < ``blk.2.*``
    (the ``.`` after a shorter number sorts before any digit, as ``str`` comparison does)."""
    place = array("I", bytes(4 * n_layer))
    for i, il in enumerate(sorted(range(n_layer), key=str)):
        place[il] = i
    return place


@lru_cache(maxsize=256)
def _layer_choices(qs: _QuantState) -> tuple[tuple[str, str], ...]:
    """Per layer, the type chosen for its ``attn_v``-like tensor and for its ``ffn_down``
    tensors, before the fallback: the only choices that depend on the layer. They depend on the
    file type and the counts in ``qs``, not on tensor sizes, so shapes of one depth share them."""
    base = _DEFAULT_TYPE[qs.ftype]
    if qs.ftype in _FLOAT_FILES or qs.ftype == "MXFP4":
        return ((base, base),) * qs.n_layer
    if qs.value_layers is None:
        place = _name_order(qs.n_layer)
    else:
        # i_attention_wv counts the attn_v-like tensors that exist, in the loader's name order.
        place = array("I", bytes(4 * qs.n_layer))
        for i, il in enumerate(sorted(qs.value_layers, key=str)):
            place[il] = i
    pairs: dict[tuple[str, str], tuple[str, str]] = {}  # one tuple per distinct pair, not per layer
    choices = []
    for il in range(qs.n_layer):
        pair = (_attn_v_type(qs, place[il], base), _ffn_down_type(qs, il, base))
        choices.append(pairs.setdefault(pair, pair))
    return tuple(choices)


def _tensor_type(
    qs: _QuantState,
    category: Category,
    ne0: int,
    quantizable: bool,
    layer: tuple[str, str],
    expert: bool = False,
) -> str:
    """The ggml type ``llama-quantize`` gives a tensor: F32 where it leaves it (1-D tensors, norms,
    the MoE router), the base type in a float file, otherwise ``llama_tensor_get_type_impl``'s
    choice after ``tensor_type_fallback``. ``layer`` is its layer's ``_layer_choices`` entry.
    An MXFP4 file (``LLAMA_FTYPE_MOSTLY_MXFP4_MOE``) has routed experts in MXFP4 and every other
    quantizable tensor, the output head included, in Q8_0; gpt-oss keeps MXFP4 experts in any
    file (``_MXFP4_EXPERTS``)."""
    if not quantizable:
        return "F32"
    if category == "unquantized":
        # The source file's type: a float file's own, F16 for a file quantized from F16/BF16.
        return _DEFAULT_TYPE[qs.ftype] if qs.ftype in _FLOAT_FILES else "F16"
    if expert and (qs.mxfp4_experts or qs.ftype == "MXFP4"):
        return _with_fallback(ne0, "MXFP4")
    base = _DEFAULT_TYPE[qs.ftype]
    if qs.ftype in _FLOAT_FILES:
        return base
    if qs.ftype == "MXFP4":
        return _with_fallback(ne0, "Q8_0")
    if category in _ATTN_V_LIKE:
        choice = layer[0]
    elif category == "ffn_down":
        choice = layer[1]
    else:
        choice = _fixed_type(qs, category, ne0, base)
    return _with_fallback(ne0, choice)


# A row length enters the type choice only through which block lengths divide it, and every
# block length divides 256, so ``gcd(ne0, 256)`` stands for it: blocks of shapes that differ
# only in size share their types.
_ROW_UNIT = 256
assert all(_ROW_UNIT % block == 0 for block, _size in GGML_BLOCK.values())
_Signature = tuple[tuple[Category, int, bool, bool], ...]


def _signature(shapes: tuple[_Shape, ...]) -> _Signature:
    return tuple((s.category, gcd(s.ne0, _ROW_UNIT), s.quantizable, s.expert) for s in shapes)


def _block_types(qs: _QuantState, signature: _Signature, layer: tuple[str, str]) -> tuple[str, ...]:
    """``_tensor_type`` of each tensor of a block (or of the embedding or output tensors)."""
    return tuple(
        _tensor_type(qs, category, ne0, quantizable, layer, expert)
        for category, ne0, quantizable, expert in signature
    )


def gguf_tensor_types(arch: Architecture, gguf_type: str) -> list[tuple[GgufTensor, str]]:
    """Each tensor with the ggml type ``llama-quantize`` gives it under ``gguf_type``.

    Tensors are visited in the name order of the loader's map (``blk.0``, ``blk.1``, ``blk.10``…),
    which decides which layers' ``attn_v`` the ``i_attention_wv`` rules pick (``_name_order``).
    One object per tensor: the estimate itself reads the summed ``gguf_layout`` instead.
    """
    qs = _quant_state(arch, gguf_type)
    choices = _layer_choices(qs)
    outside = (_DEFAULT_TYPE[gguf_type],) * 2  # not read: no attn_v or ffn_down outside blocks
    return [
        (
            t,
            _tensor_type(
                qs,
                t.category,
                t.ne0,
                t.quantizable,
                outside if t.layer is None else choices[t.layer],
                t.expert,
            ),
        )
        for t in gguf_tensors(arch)
    ]


def _nbytes(ne0: int, rows: int, ggml_type: str) -> int:
    block, size = GGML_BLOCK[ggml_type]
    return rows * (ne0 // block) * size


def tensor_bytes(t: GgufTensor, ggml_type: str) -> int:
    """``elements / block × bytes per block`` (ggml_nbytes of a contiguous tensor)."""
    return _nbytes(t.ne0, t.rows, ggml_type)


def cache_row_bytes(cache_type: str, width: int) -> int:
    """``ggml_row_size``: quantized caches use ggml's blocks (q8_0 is 34 bytes per 32 values)."""
    block, size = GGML_BLOCK[cache_type.upper()]
    return -(-width // block) * size


# --- the file and the caches, summed per class of layer ---------------------------------------
_Class = TypeVar("_Class", bound=Hashable)


@dataclass(frozen=True)
class _LayerClasses(Generic[_Class]):
    """Layers sorted into the few classes they come in, with how many layers of each class lie in
    layers ``il..n-1`` (entry ``n`` is 0): what ``-ngl`` puts on the GPU, every layer from a
    start layer on, is then a sum over the classes rather than over the layers."""

    members: tuple[_Class, ...]  # in the order of their first layer
    from_layer: tuple[array[int], ...]  # per member

    def weighted_from(self, il: int, weights: Iterable[int]) -> int:
        """``sum(weight of the class of layer j for j in il..n-1)``."""
        return sum(w * counts[il] for w, counts in zip(weights, self.from_layer, strict=True))

    def count(self, member: _Class) -> int:
        return self.from_layer[self.members.index(member)][0]


def _classify(per_layer: Sequence[_Class]) -> _LayerClasses[_Class]:
    members = tuple(dict.fromkeys(per_layer))
    from_layer = []
    for member in members:
        ones = reversed([1 if kind == member else 0 for kind in per_layer])
        from_layer.append(array("I", [*reversed(tuple(accumulate(ones))), 0]))
    return _LayerClasses(members, tuple(from_layer))


class _CacheClass(NamedTuple):
    """What one layer caches per cell: ``kv`` is "full" or "sliding" for a layer with its own KV
    cache ("" for none), then the K, V and indexer-key widths in elements (``n_embd_k_gqa``,
    ``n_embd_v_gqa``, 0 for MLA's V), and the F32 recurrent-state elements."""

    kv: str
    k_width: int
    v_width: int
    index_width: int
    state: int


@dataclass(frozen=True)
class CacheLayers:
    """Per architecture, the layers that hold KV and recurrent state, so a KV or RS buffer's
    split is O(1) for any ``-ngl``."""

    classes: _LayerClasses[_CacheClass]
    recurrent_layers: int

    @property
    def v_width_max(self) -> int:
        """``n_embd_v_gqa_max``: the widest V of any layer."""
        return max((m.v_width for m in self.classes.members), default=0)

    def kv_class_bytes(self, options: LlamaCppOptions, full: int, sliding: int) -> tuple[int, ...]:
        """One layer's KV bytes per class, with ``full`` and ``sliding`` cells."""
        v_max = self.v_width_max
        return tuple(kv_layer_bytes(m, options, full, sliding, v_max) for m in self.classes.members)

    def kv_bytes_from(self, il: int, class_bytes: tuple[int, ...]) -> int:
        """KV bytes of layers ``il..n-1``, given ``kv_class_bytes``."""
        return self.classes.weighted_from(il, class_bytes)

    def state_elements_from(self, il: int) -> int:
        """Recurrent-state elements of one cell over layers ``il..n-1``."""
        return self.classes.weighted_from(il, (m.state for m in self.classes.members))


def kv_layer_bytes(
    layer: _CacheClass, options: LlamaCppOptions, full: int, sliding: int, v_max: int = 0
) -> int:
    """One layer's K, V and indexer keys over its cells (a sliding layer takes the sliding
    cache's when there is one): ``ggml_row_size(type, width) · cells`` each, the indexer keys in
    ``type_k`` (llama-kv-cache-dsa.cpp). Without flash attention V is stored transposed, and
    every layer's V is padded to the widest (``n_embd_v_gqa_max``, TAG_V_CACHE_VARIABLE in
    llama-kv-cache.cpp): Gemma 4's full-attention layers then keep V as wide as a sliding one."""
    if not layer.kv:
        return 0
    cells = sliding if layer.kv == "sliding" and sliding else full
    k = cache_row_bytes(options.cache_type_k, layer.k_width)
    v_width = layer.v_width if options.flash_attention else max(layer.v_width, v_max)
    v = cache_row_bytes(options.cache_type_v, v_width) if layer.v_width else 0
    index = cache_row_bytes(options.cache_type_k, layer.index_width) if layer.index_width else 0
    return (k + v + index) * cells


def _kv_widths(arch: Architecture, il: int, indexed: bool = False) -> tuple[int, int, int]:
    """K, V and indexer-key widths of layer ``il``'s cache in llama.cpp: MLA caches the latent
    and the rope part as K (``n_embd_head_k = kv_lora_rank + qk_rope_head_dim``, one KV head) and
    no V (``has_v = !is_mla``); a DSA layer with an indexer adds one ``index_head_dim`` key."""
    index = (arch.indexer_head_dim or 0) if indexed else 0
    if arch.attention_kind == "mla":
        return (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0), 0, index
    heads, k_dim, v_dim = arch.kv_shape(il)
    return heads * k_dim, heads * v_dim, index


def cache_layers(arch: Architecture) -> CacheLayers:
    """Which layers keep KV (not a recurrent layer of a hybrid, not one reusing an earlier
    layer's KV), which of those are sliding, their widths and the recurrent state each keeps
    per cell."""
    uniform = not (arch.mixer_kinds or arch.layer_types or arch.kv_shared_layers)
    uniform = uniform and not (arch.kv_layer_shapes or arch.indexer_layers)
    if uniform and arch.parallel_recurrent is None:
        # Attention everywhere, a full cache per layer: shared by every model of these widths.
        return _attention_layers(arch.num_layers, _kv_widths(arch, 0))
    return _mixed_layers(arch)


@lru_cache(maxsize=128)
def _attention_layers(n_layer: int, widths: tuple[int, int, int]) -> CacheLayers:
    return CacheLayers(_classify([_CacheClass("full", *widths, 0)] * n_layer), 0)


@lru_cache(maxsize=128)
def _mixed_layers(arch: Architecture) -> CacheLayers:
    types = arch.layer_types
    indexed = frozenset(arch.indexer_layers)
    by_kind: dict[str, int] = {}
    per_layer: list[_CacheClass] = []
    for il in range(arch.num_layers):
        kv, widths = "", (0, 0, 0)
        if arch.keeps_kv(il):
            kv = "sliding" if il < len(types) and types[il] == "sliding" else "full"
            widths = _kv_widths(arch, il, il in indexed)
        kind = arch.mixer_kind(il)
        if kind not in by_kind:
            by_kind[kind] = _layer_state_elements(arch, kind)
        per_layer.append(_CacheClass(kv, *widths, by_kind[kind]))
    classes = _classify(per_layer)
    recurrent = sum(classes.count(member) for member in classes.members if member.state)
    return CacheLayers(classes, recurrent)


# A block class: MoE or dense, and its layer's choices for attn_v and ffn_down (_layer_choices).
_BlockClass = tuple[_Structure, tuple[str, str]]


@dataclass(frozen=True)
class _FileTypes:
    """What a file's layout keeps whatever its tensor sizes: each block class's tensor types,
    which layers have which class, and the tensors per type."""

    embeddings: tuple[str, ...]
    outputs: tuple[str, ...]
    blocks: _LayerClasses[_BlockClass]
    block_types: tuple[tuple[str, ...], ...]  # per block class
    tensor_types: tuple[tuple[str, int], ...]  # in the order the file first uses each type


@lru_cache(maxsize=256)
def _file_types(
    qs: _QuantState,
    moe_flags: tuple[_Structure, ...],
    blocks: tuple[tuple[_Structure, _Signature], ...],
    embeddings: _Signature,
    outputs: _Signature,
) -> _FileTypes:
    """The types of a file's tensors from their signatures: shapes that differ only in size
    (the /fits/ search's reference models of one depth) share them."""
    outside = (_DEFAULT_TYPE[qs.ftype],) * 2  # not read: no attn_v or ffn_down outside blocks
    signatures = dict(blocks)
    classes = _classify(list(zip(moe_flags, _layer_choices(qs), strict=True)))
    block_types = tuple(_block_types(qs, signatures[moe], layer) for moe, layer in classes.members)
    counts: dict[str, int] = {}
    # File order: embeddings, blocks (each class first met at its first layer), output layer.
    embedding_types = _block_types(qs, embeddings, outside)
    output_types = _block_types(qs, outputs, outside)
    groups = [(embedding_types, 1)]
    groups += [
        (kinds, classes.count(m)) for kinds, m in zip(block_types, classes.members, strict=True)
    ]
    groups.append((output_types, 1))
    for types, times in groups:
        for kind in types:
            counts[kind] = counts.get(kind, 0) + times
    return _FileTypes(
        embeddings=embedding_types,
        outputs=output_types,
        blocks=classes,
        block_types=block_types,
        tensor_types=tuple(counts.items()),
    )


@dataclass(frozen=True)
class GgufLayout:
    """A GGUF file of one architecture and file type, summed the way llama.cpp places it at load:
    the tables that stay on the host, the blocks, the output layer; plus what ``print_info``
    reports (file size, bits per weight, tensors per type)."""

    gguf_type: str
    file_bytes: int
    elements: int
    tensor_types: tuple[tuple[str, int], ...]  # in the order the file first uses each type
    token_embd_bytes: int
    host_only_bytes: int  # token_embd and position_embd, read with get_rows
    output_bytes: int  # output_norm and the output head
    blocks: _LayerClasses[_BlockClass]
    block_bytes: tuple[int, ...]  # one block of each class
    expert_bytes: tuple[int, ...]  # its routed-expert tensors (``ffn_*_exps``)
    layers: CacheLayers

    def layer_bytes_from(self, il: int) -> int:
        """Bytes of the blocks ``il..n-1``."""
        return self.blocks.weighted_from(il, self.block_bytes)

    def expert_bytes_between(self, start: int, stop: int) -> int:
        """Bytes of the routed-expert tensors of blocks ``start..stop-1``."""
        if stop <= start:
            return 0
        weights = self.expert_bytes
        return self.blocks.weighted_from(start, weights) - self.blocks.weighted_from(stop, weights)


def _bytes_of(shapes: tuple[_Shape, ...], types: tuple[str, ...]) -> int:
    return sum(_nbytes(s.ne0, s.rows, kind) for s, kind in zip(shapes, types, strict=True))


def gguf_layout(arch: Architecture, gguf_type: str) -> GgufLayout:
    """The file's bytes from one template per block structure, without a tensor object per
    tensor: the same types and sums as ``gguf_tensor_types``, which lists them one by one.

    Remembered per architecture and file type. A stated parameter count (``params_override``)
    changes no tensor, so it is left out of the key: the /fits/ search's reference models of
    neighbouring sizes often have the same tensors."""
    if arch.params_override is not None:
        arch = arch.model_copy(update={"params_override": None})
    return _gguf_layout(arch, gguf_type)


@dataclass(frozen=True)
class OverrideMoves:
    """The tensors that ``-ot …=CPU`` entries (with ``--cpu-moe``/``--n-cpu-moe`` as the
    entries they stand for) keep in system RAM: bytes per block, routed experts apart from the
    rest (a decode step reads only the experts it routes to), and of the output layer."""

    experts: tuple[int, ...]
    other: tuple[int, ...]
    output: int

    def block(self, il: int) -> int:
        return self.experts[il] + self.other[il]

    def from_block(self, il: int) -> tuple[int, int]:
        """(expert bytes, other bytes) of the blocks ``il..n-1``."""
        return sum(self.experts[il:]), sum(self.other[il:])


def override_moves(arch: Architecture, gguf_type: str, patterns: tuple[str, ...]) -> OverrideMoves:
    """What ``patterns`` move to the CPU in a ``gguf_type`` file of ``arch``: each tensor whose
    name (``blk.N.ffn_up_exps.weight``) a pattern matches anywhere. Norms and small vectors are
    grouped per block here (``blk.N.norms``) and follow that name. Remembered per pattern list."""
    if arch.params_override is not None:
        arch = arch.model_copy(update={"params_override": None})
    return _override_moves(arch, gguf_type, patterns)


@lru_cache(maxsize=128)
def _override_moves(arch: Architecture, gguf_type: str, patterns: tuple[str, ...]) -> OverrideMoves:
    compiled = [re.compile(pattern) for pattern in patterns]
    experts, other = [0] * arch.num_layers, [0] * arch.num_layers
    output_names = {shape.name for shape in _output_shapes(arch)}
    output = 0
    for tensor, ggml_type in gguf_tensor_types(arch, gguf_type):
        name = f"{tensor.name}.weight"
        if not any(pattern.search(name) for pattern in compiled):
            continue
        size = tensor_bytes(tensor, ggml_type)
        if tensor.layer is not None:
            (experts if tensor.expert else other)[tensor.layer] += size
        elif tensor.name in output_names:
            output += size
        # an input table (token_embd, …) is on the host already
    return OverrideMoves(tuple(experts), tuple(other), output)


def _host_overrides(
    arch: Architecture, layout: GgufLayout, options: LlamaCppOptions
) -> OverrideMoves | None:
    """The ``-ot`` entries' moves, or None when only the expert flags override (their bytes
    come from the layout's sums, without a walk over the tensors)."""
    if not options.override_tensors:
        return None
    return override_moves(arch, layout.gguf_type, options.override_patterns(arch))


def _moved_from(
    arch: Architecture, layout: GgufLayout, options: LlamaCppOptions, il: int
) -> tuple[int, int, int]:
    """(expert bytes, other bytes) of blocks ``il..n-1`` and the output-layer bytes that tensor
    overrides keep on the host."""
    moves = _host_overrides(arch, layout, options)
    if moves is None:
        return layout.expert_bytes_between(il, options.cpu_expert_layers(arch)), 0, 0
    return (*moves.from_block(il), moves.output)


@lru_cache(maxsize=256)
def _gguf_layout(arch: Architecture, gguf_type: str) -> GgufLayout:
    qs = _quant_state(arch, gguf_type)
    embeddings, outputs = _embedding_shapes(arch), _output_shapes(arch)
    flags = _structures(arch)
    shapes = {structure: _block_shapes(arch, structure) for structure in sorted(set(flags))}
    types = _file_types(
        qs,
        flags,
        tuple((moe, _signature(block)) for moe, block in shapes.items()),
        _signature(embeddings),
        _signature(outputs),
    )
    token_embd = _bytes_of(embeddings[:1], types.embeddings[:1])
    host_only = _bytes_of(embeddings, types.embeddings)
    output = _bytes_of(outputs, types.outputs)
    block_bytes = tuple(
        _bytes_of(shapes[moe], kinds)
        for (moe, _layer), kinds in zip(types.blocks.members, types.block_types, strict=True)
    )
    expert_bytes = tuple(
        sum(
            _nbytes(s.ne0, s.rows, kind)
            for s, kind in zip(shapes[moe], kinds, strict=True)
            if s.expert
        )
        for (moe, _layer), kinds in zip(types.blocks.members, types.block_types, strict=True)
    )
    block_elements = (sum(s.elements for s in shapes[moe]) for moe, _ in types.blocks.members)
    elements = sum(s.elements for s in embeddings + outputs)
    elements += types.blocks.weighted_from(0, block_elements)
    return GgufLayout(
        gguf_type=gguf_type,
        file_bytes=host_only + types.blocks.weighted_from(0, block_bytes) + output,
        elements=elements,
        tensor_types=types.tensor_types,
        token_embd_bytes=token_embd,
        host_only_bytes=host_only,
        output_bytes=output,
        blocks=types.blocks,
        block_bytes=block_bytes,
        expert_bytes=expert_bytes,
        layers=cache_layers(arch),
    )


# --- buffers ----------------------------------------------------------------------------------
def _pad(value: int, to: int) -> int:
    return -(-value // to) * to


def kv_streams(options: LlamaCppOptions) -> int:
    """KV streams: one with the unified cache, else one per slot (``n_stream``)."""
    return 1 if options.kv_unified else options.n_parallel


def kv_cells(arch: Architecture, options: LlamaCppOptions) -> tuple[int, int]:
    """Cells of the full-attention cache and of the sliding-window cache, all streams together.

    ``n_ctx`` is padded to 256; one unified stream holds all of it, else each slot's stream holds
    ``pad(n_ctx / n_seq, 256)`` (llama-context.cpp). ``llama_kv_cache_iswa`` gives sliding layers
    ``pad(min(kv_size, n_swa · n_seq + n_ubatch), 256)`` cells in the unified stream (the window
    of every sequence plus one micro-batch), ``pad(min(kv_size, n_swa + n_ubatch), 256)`` per
    stream otherwise, and ``kv_size`` with ``--swa-full``.
    """
    n_ctx = _pad(options.n_ctx, 256)
    streams = kv_streams(options)
    per_stream = n_ctx if streams == 1 else _pad(n_ctx // streams, 256)
    full = per_stream * streams
    if arch.model_type not in _ISWA_MODEL_TYPES or not arch.sliding_window:
        return full, 0
    if options.swa_full:
        return full, full
    window = arch.sliding_window * (options.n_parallel if options.kv_unified else 1)
    return full, _pad(min(per_stream, window + options.n_ubatch), 256) * streams


def _gpu_layer_start(arch: Architecture, options: LlamaCppOptions) -> int:
    """First repeating layer on the GPU: ``max(n_layer + 1 - ngl, 0)`` (llama-model.cpp); the
    output layer (index n_layer) is on the GPU whenever ``ngl ≥ 1``."""
    ngl = arch.num_layers + 1 if options.n_gpu_layers is None else options.n_gpu_layers
    return max(arch.num_layers + 1 - ngl, 0)


def _first_gpu_block(arch: Architecture, options: LlamaCppOptions) -> int:
    """The index into the ``*_from`` sums where the GPU's share starts: the first offloaded
    block, or ``n_layer`` (nothing) when ``-ngl 0`` keeps every layer on the host."""
    if options.n_gpu_layers == 0:
        return arch.num_layers
    return min(_gpu_layer_start(arch, options), arch.num_layers)


def model_buffer(arch: Architecture, layout: GgufLayout, options: LlamaCppOptions) -> DeviceBytes:
    """Weights by device: token embeddings always on the host (read with ``get_rows``); layers from
    ``_gpu_layer_start`` on, the final norm and the output head on the GPU, except the routed
    experts that ``--n-cpu-moe``/``--cpu-moe`` keep in RAM (their override puts them in the CPU
    buffer list, ``CPU_Mapped`` with mmap: llama-model.cpp ``make_cpu_buft_list``). A tied output
    head is a duplicate of the embedding table loaded beside the GPU layers."""
    start = _gpu_layer_start(arch, options)
    output_on_gpu = arch.num_layers >= start and options.n_gpu_layers != 0
    first_gpu = _first_gpu_block(arch, options)
    blocks_gpu = layout.layer_bytes_from(first_gpu)
    # Tensors an override keeps in RAM leave the GPU layers' share (CPU_Mapped with mmap).
    moved_experts, moved_other, moved_output = _moved_from(arch, layout, options, first_gpu)
    blocks_gpu -= moved_experts + moved_other
    blocks_host = layout.layer_bytes_from(0) - blocks_gpu
    gpu, host = blocks_gpu, layout.host_only_bytes + blocks_host
    if output_on_gpu:
        gpu += layout.output_bytes - moved_output
        host += moved_output
    else:
        host += layout.output_bytes
    if arch.tie_word_embeddings and output_on_gpu:
        gpu += layout.token_embd_bytes
    elif arch.tie_word_embeddings and arch.model_type in _TIED_HEAD_FIRST:
        host += layout.token_embd_bytes
    # else on the host the tied head reads the embedding table itself
    return DeviceBytes(gpu=gpu, host=host)


def expert_placement(
    arch: Architecture, layout: GgufLayout, options: LlamaCppOptions
) -> DeviceBytes:
    """The routed-expert tensors by device: on the host those of the layers ``-ngl`` leaves
    there and those the overrides (``--n-cpu-moe``, ``--cpu-moe``, ``-ot``) keep in RAM, the
    rest on the GPU."""
    total = layout.expert_bytes_between(0, arch.num_layers)
    first_gpu = _first_gpu_block(arch, options)
    moved_experts, _other, _output = _moved_from(arch, layout, options, first_gpu)
    host = layout.expert_bytes_between(0, first_gpu) + moved_experts
    return DeviceBytes(gpu=total - host, host=host)


def kv_buffer(
    arch: Architecture, options: LlamaCppOptions, layers: CacheLayers | None = None
) -> DeviceBytes:
    """Per attention layer ``row_size(type_k, n_embd_k_gqa) · cells + row_size(type_v, …) · cells``,
    on the device of the layer (llama-kv-cache.cpp, offload_kqv on). Recurrent layers of a hybrid
    and layers that reuse an earlier layer's KV keep none. ``layers``: ``cache_layers(arch)``."""
    if layers is None:
        layers = cache_layers(arch)
    full, swa = kv_cells(arch, options)
    per_class = layers.kv_class_bytes(options, full, swa)
    gpu = layers.kv_bytes_from(_first_gpu_block(arch, options), per_class)
    return DeviceBytes(gpu=gpu, host=layers.kv_bytes_from(0, per_class) - gpu)


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


def _layer_state_elements(arch: Architecture, kind: MixerKind) -> int:
    """F32 elements one cell of a layer mixed by ``kind`` keeps; 0 on layers the recurrent
    memory skips."""
    elements = 0
    if kind not in ("attention", "none"):
        elements += recurrent_state_elements(arch.recurrent_state(kind))
    if arch.parallel_recurrent is not None:
        elements += recurrent_state_elements(arch.parallel_recurrent)
    return elements


def recurrent_layer_count(arch: Architecture) -> int:
    """Layers the recurrent memory keeps a state for (the hybrid's ``filter_recr``)."""
    return cache_layers(arch).recurrent_layers


def recurrent_buffer(
    arch: Architecture, options: LlamaCppOptions, layers: CacheLayers | None = None
) -> DeviceBytes:
    """The RS buffer: F32 ``n_embd_r + n_embd_s`` per cell (one per ``--parallel`` slot) and
    recurrent layer, on the device of the layer like the KV cache (llama-memory-recurrent.cpp);
    a recurrent mixer running beside attention (Falcon-H1) adds its state to every layer.
    ``layers``: ``cache_layers(arch)``."""
    if layers is None:
        layers = cache_layers(arch)
    cell_bytes = 4 * recurrent_cells(options)
    gpu = cell_bytes * layers.state_elements_from(_first_gpu_block(arch, options))
    return DeviceBytes(gpu=gpu, host=cell_bytes * layers.state_elements_from(0) - gpu)


def _graph_inputs(arch: Architecture, options: LlamaCppOptions) -> tuple[int, int]:
    """The reserved graph's micro-batch ``n_ub = min(n_ctx, n_ubatch)`` and its KQ mask's bytes
    (f16 with flash attention, else f32, over every cell and ``n_ub`` padded to 64)."""
    full, _swa = kv_cells(arch, options)
    n_ub = min(_pad(options.n_ctx, 256), options.n_ubatch)
    return n_ub, (2 if options.flash_attention else 4) * full * _pad(n_ub, 64)


def compute_phases(arch: Architecture, options: LlamaCppOptions) -> tuple[int, int]:
    """(the repeating layers' phase, the output head's phase) of ``compute_buffer``'s GPU part.
    ggml_backend_sched allocates each node of the reserved graph in the buffer of the backend
    it runs on, so with the layers split over GPUs only the device that holds the output layer
    holds the logits; the others reserve the largest of their layers' phases."""
    full, _swa = kv_cells(arch, options)
    n_ub, mask_bytes = _graph_inputs(arch, options)
    h = arch.hidden_size
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
    return max(attention, feed_forward), 4 * n_ub * (arch.vocab_size + h)


def compute_buffer(arch: Architecture, options: LlamaCppOptions) -> DeviceBytes:
    """The reserved worst-case graph for ``n_ub = min(n_ctx, n_ubatch)`` tokens over all cells.

    GPU: the largest of three phases (``compute_phases``), each a set of f32 tensors alive at once —
    attention without flash attention: scores ``n_kv · n_ub · n_head`` plus the mask copy and four
    ``n_embd``-wide activations; with flash attention only the f16 mask and those activations;
    feed-forward: two intermediate-wide tensors (gate/up, or the routed experts' ``k ·
    moe_intermediate``) and two residuals; output head: logits for every token of the micro-batch
    (``n_vocab · n_ub``) and the final norm. Host (``CUDA_Host compute buffer``): the input
    embeddings (``n_embd · n_ub`` f32) and the KQ mask (f32, or f16 with flash attention).
    """
    n_ub, mask_bytes = _graph_inputs(arch, options)
    h = arch.hidden_size
    device = max(compute_phases(arch, options))
    host = 4 * n_ub * h + mask_bytes
    if options.cpu_expert_layers(arch) or (arch.is_moe and options.override_tensors):
        # The routed experts left in RAM run in the CPU part of the graph: their gate and up
        # outputs for the micro-batch, f32.
        host += 4 * n_ub * 2 * arch.experts_per_token * arch.moe_intermediate_size
    if options.n_gpu_layers == 0:
        # CPU only: one CPU compute buffer holds the graph and its inputs.
        return DeviceBytes(gpu=0, host=device)
    return DeviceBytes(gpu=device, host=host)


def estimate_llama_cpp(
    arch: Architecture,
    options: LlamaCppOptions,
    *,
    layout: GgufLayout | None = None,
    devices: int = 1,
) -> LlamaCppResult:
    """All of llama.cpp's load-time buffers for ``arch`` under ``options`` on ``devices`` GPUs:
    O(1) once the file's ``gguf_layout`` is known (remembered per architecture and file type;
    searches that try many contexts or layer counts for one file may pass it in), O(layers) to
    split them over several GPUs."""
    options = options.for_model(arch)
    file_type = options.file_type(arch)
    if layout is None:
        layout = gguf_layout(arch, file_type)
    elif layout.gguf_type != file_type:
        raise ValueError(f"layout of a {layout.gguf_type} file for a {file_type} estimate")
    full, swa = kv_cells(arch, options)
    start = _gpu_layer_start(arch, options)
    gpu_layers = 0 if options.n_gpu_layers == 0 else arch.num_layers + 1 - start
    compute = compute_buffer(arch, options)
    model = model_buffer(arch, layout, options)
    kv = kv_buffer(arch, options, layout.layers)
    recurrent = recurrent_buffer(arch, options, layout.layers)
    per_device: tuple[LlamaCppDevice, ...] = ()
    if devices > 1:
        per_device = device_buffers(arch, layout, options, devices)
        compute = DeviceBytes(gpu=sum(d.compute for d in per_device), host=compute.host)
    elif gpu_layers:
        # One GPU holds the GPU part of every buffer (device_buffers gives the same sums).
        per_device = (
            LlamaCppDevice(
                name="CUDA0",
                layers=gpu_layers,
                model=model.gpu,
                kv=kv.gpu,
                recurrent=recurrent.gpu,
                compute=compute.gpu,
            ),
        )
    return LlamaCppResult(
        gguf_type=file_type,
        gguf_file_bytes=layout.file_bytes,
        bits_per_weight=round(8 * layout.file_bytes / layout.elements, 3),
        tensor_types=dict(layout.tensor_types),
        n_ctx_padded=full,
        kv_cells_full=full,
        kv_cells_swa=swa,
        gpu_layers=gpu_layers,
        model_buffer=model,
        expert_bytes=expert_placement(arch, layout, options),
        kv_buffer=kv,
        recurrent_buffer=recurrent,
        compute_buffer=compute,
        output_buffer_bytes=4 * arch.vocab_size * options.n_parallel,
        devices=per_device,
    )


# --- several GPUs: the layer split ----------------------------------------------------------
# ggml-backend.h: the scheduler keeps this many copies of each split's inputs when it runs the
# devices as a pipeline (llama-context.cpp: several devices, every layer offloaded, -sm layer,
# the KV cache offloaded, no tensor overrides).
GGML_SCHED_MAX_COPIES = 4


def _f32(value: float) -> float:
    """``value`` rounded to a C ``float``, as llama.cpp computes the split points."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def layer_split(slots: int, devices: int, shares: Sequence[float] | None = None) -> list[int]:
    """How many of ``slots`` offloaded layer slots (repeating layers, then the output layer) each
    of ``devices`` GPUs gets under ``-sm layer`` (llama.cpp's default with several GPUs).
    llama-model.cpp ``load_tensors`` cumulates the shares (``-ts``, else each device's free
    memory; equal cards: equal shares), normalises them into split points in ``float`` and puts
    slot ``j`` on the first device whose point is above ``j / slots`` (``std::upper_bound``)."""
    weights = list(shares) if shares is not None else [1.0] * devices
    if len(weights) != devices:
        raise ValueError(f"{len(weights)} shares for {devices} devices")
    points, running = [], 0.0
    for weight in weights:
        running = _f32(running + _f32(weight))
        points.append(running)
    points = [_f32(point / running) for point in points]
    counts = [0] * devices
    for slot in range(slots):
        device = bisect_right(points, _f32(_f32(slot) / _f32(slots)))
        counts[min(device, devices - 1)] += 1
    return counts


def _slot_parts(
    arch: Architecture, layout: GgufLayout, options: LlamaCppOptions
) -> tuple[list[int], list[int], list[int]]:
    """Per layer slot from the first offloaded one on: its tensors on the GPU, and its KV cache
    and recurrent state (on the device of the layer, as ``kv_buffer`` and ``recurrent_buffer``
    place them); the last slot is the output layer (final norm, output head and a tied head's
    copy of the embeddings, as ``model_buffer`` places them)."""
    start = _gpu_layer_start(arch, options)
    n_layer = arch.num_layers
    model = [layout.layer_bytes_from(il) - layout.layer_bytes_from(il + 1) for il in range(n_layer)]
    moves = _host_overrides(arch, layout, options)
    if moves is None:
        for il in range(options.cpu_expert_layers(arch)):
            model[il] -= layout.expert_bytes_between(il, il + 1)
    else:
        model = [held - moves.block(il) for il, held in enumerate(model)]
    output = layout.output_bytes - (moves.output if moves is not None else 0)
    model.append(output + (layout.token_embd_bytes if arch.tie_word_embeddings else 0))
    full, swa = kv_cells(arch, options)
    layers = layout.layers
    per_class = layers.kv_class_bytes(options, full, swa)
    kv, recurrent = [], []
    cells = recurrent_cells(options)
    for il in range(n_layer):
        # Layer il's own bytes: those from il on, less those from il + 1 on.
        kv.append(layers.kv_bytes_from(il, per_class) - layers.kv_bytes_from(il + 1, per_class))
        states = layers.state_elements_from(il) - layers.state_elements_from(il + 1)
        recurrent.append(4 * states * cells)
    kv.append(0)
    recurrent.append(0)
    return model[start:], kv[start:], recurrent[start:]


def gpu_slot_bytes(arch: Architecture, layout: GgufLayout, options: LlamaCppOptions) -> list[int]:
    """GPU bytes of each layer slot from the first offloaded one on: ``_slot_parts`` summed."""
    model, kv, recurrent = _slot_parts(arch, layout, options)
    return [sum(parts) for parts in zip(model, kv, recurrent, strict=True)]


def _pipelined(
    arch: Architecture, options: LlamaCppOptions, devices: int, split_mode: SplitMode | None = None
) -> bool:
    """llama-context.cpp runs the devices as a pipeline (``GGML_SCHED_MAX_COPIES`` copies of
    each split's inputs) with several devices, every layer offloaded, ``-sm layer``, the KV cache
    offloaded and no tensor override (the expert flags are overrides)."""
    return (
        devices > 1
        and (split_mode or options.split_mode) == "layer"
        and _gpu_layer_start(arch, options) == 0
        and options.n_gpu_layers != 0
        and not options.has_tensor_overrides
    )


def device_buffers(
    arch: Architecture, layout: GgufLayout, options: LlamaCppOptions, devices: int = 1
) -> tuple[LlamaCppDevice, ...]:
    """Each GPU's model, KV and compute buffers. ``-sm layer`` gives each device a slice of the
    offloaded layer slots (``layer_split``, the output layer on the device of the last slot);
    ``-sm none`` puts them all on ``--main-gpu``. Every device holding a layer reserves its part
    of the worst-case graph (``_device_computes``: ggml_backend_sched allocates each node on its
    backend; the logits only where the output layer is: 4× P100 logs in
    llama_cpp_offload_logs.json print 503 MiB there at -ub 512, beside 242 MiB on the middle
    GPUs; where attention dominates every device reserves about the same, as ik_llama.cpp PR
    #235's two-4090 log, 1166.01 and 1166.02 MiB), and a pipeline adds
    ``GGML_SCHED_MAX_COPIES - 1`` copies of its inputs (Unsloth PR #7637 traced 4 GiB per device
    at a 1M context to them). Not counted here: the CUDA context each device also holds."""
    if options.n_gpu_layers == 0:
        return ()
    model, kv, recurrent = _slot_parts(arch, layout, options)
    if options.split_mode == "none" or devices == 1:
        counts = [0] * devices
        counts[min(options.main_gpu, devices - 1) if options.split_mode == "none" else 0] = len(
            model
        )
    else:
        shares = options.tensor_split or options.device_memory_bytes
        counts = layer_split(len(model), devices, shares)
    computes = _device_computes(arch, options, counts, _pipelined(arch, options, devices))
    out, first = [], 0
    for index, count in enumerate(counts):
        last = first + count
        out.append(
            LlamaCppDevice(
                name=f"CUDA{index}",
                layers=count,
                model=sum(model[first:last]),
                kv=sum(kv[first:last]),
                recurrent=sum(recurrent[first:last]),
                compute=computes[index],
            )
        )
        first = last
    return tuple(out)


def _device_computes(
    arch: Architecture, options: LlamaCppOptions, counts: Sequence[int], pipelined: bool
) -> list[int]:
    """Each device's compute buffer for ``counts`` layer slots per device (the output layer
    being the last slot): its layers' phase, the output head's phase on the device that holds
    the output layer (``compute_phases``), and a pipeline's copies of its inputs."""
    layers_phase, output_phase = compute_phases(arch, options)
    copies = (GGML_SCHED_MAX_COPIES - 1) * pipeline_input_bytes(arch, options) if pipelined else 0
    holding = [index for index, count in enumerate(counts) if count]
    output_device = holding[-1] if holding else -1
    return [
        (max(layers_phase, output_phase) if index == output_device else layers_phase) + copies
        if count
        else 0
        for index, count in enumerate(counts)
    ]


def pipeline_input_bytes(arch: Architecture, options: LlamaCppOptions) -> int:
    """The inputs of one device's part of the graph: the hidden state it receives
    (``n_embd · n_ub`` f32) and its copy of the KQ mask (f16 with flash attention, else f32),
    as ``compute_buffer`` counts them."""
    n_ub, mask_bytes = _graph_inputs(arch, options)
    return 4 * n_ub * arch.hidden_size + mask_bytes


def layer_split_gpu_bytes(
    arch: Architecture,
    options: LlamaCppOptions,
    devices: int,
    *,
    layout: GgufLayout | None = None,
    slots: list[int] | None = None,
) -> list[int]:
    """Each of ``devices`` equal GPUs' buffers under ``-sm layer`` (``device_buffers``), without
    the CUDA context. ``layout``: as for ``estimate_llama_cpp``; ``slots``: ``gpu_slot_bytes``,
    for a search over device counts."""
    if options.n_gpu_layers == 0:
        return [0] * devices
    if slots is None:
        layout = layout if layout is not None else gguf_layout(arch, options.file_type(arch))
        slots = gpu_slot_bytes(arch, layout, options)
    counts = layer_split(len(slots), devices)
    pipelined = _pipelined(arch, options, devices, split_mode="layer")
    computes = _device_computes(arch, options, counts, pipelined)
    totals, first = [], 0
    for count, compute in zip(counts, computes, strict=True):
        held = sum(slots[first : first + count])
        first += count
        totals.append(held + compute if count else 0)
    return totals


# --- levers -----------------------------------------------------------------------------------
def most_gpu_layers_that_fit(
    arch: Architecture,
    options: LlamaCppOptions,
    gpu_memory_bytes: int,
    *,
    layout: GgufLayout | None = None,
) -> int:
    """The largest ``-ngl`` whose GPU buffers fit in ``gpu_memory_bytes`` (0 if none does).
    GPU bytes only grow with ``-ngl``, so a bisection over 0..layers+1 finds it. ``layout``: as
    for ``estimate_llama_cpp``."""
    if layout is None:
        layout = gguf_layout(arch, options.file_type(arch))

    def fits(ngl: int) -> bool:
        trial = options.model_copy(update={"n_gpu_layers": ngl})
        return estimate_llama_cpp(arch, trial, layout=layout).gpu_bytes <= gpu_memory_bytes

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


def fewest_cpu_moe_layers_that_fit(
    arch: Architecture,
    options: LlamaCppOptions,
    gpu_memory_bytes: int,
    *,
    layout: GgufLayout | None = None,
    trials: dict[int, LlamaCppResult] | None = None,
) -> int | None:
    """The smallest ``--n-cpu-moe N`` with every layer offloaded whose GPU buffers fit in
    ``gpu_memory_bytes``: 0 when nothing needs to move, None for a model without routed experts
    or when even every expert in RAM leaves too much on the GPU. GPU bytes fall as N grows, so
    a bisection over 0..n_layer finds it. ``layout``: as for ``estimate_llama_cpp``;
    ``trials``: the estimates per N already made, filled in as the search goes, for searches
    on several cards."""
    if not arch.is_moe:
        return None
    if layout is None:
        layout = gguf_layout(arch, options.file_type(arch))
    offloaded = options.model_copy(update={"n_gpu_layers": None, "cpu_moe": False})
    made = trials if trials is not None else {}

    def fits(n: int) -> bool:
        if n not in made:
            trial = offloaded.model_copy(update={"n_cpu_moe": n})
            made[n] = estimate_llama_cpp(arch, trial, layout=layout)
        return made[n].gpu_bytes <= gpu_memory_bytes

    if not fits(arch.num_layers):
        return None
    low, high = 0, arch.num_layers
    while low < high:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid + 1
    return low


def longest_context_full_offload(
    arch: Architecture,
    options: LlamaCppOptions,
    gpu_memory_bytes: int,
    limit: int = 1 << 21,
    *,
    layout: GgufLayout | None = None,
    devices: int = 1,
) -> int:
    """The largest ``n_ctx`` (a multiple of 256) that fits fully offloaded (on each of
    ``devices`` equal GPUs of ``gpu_memory_bytes``, split by layer); 0 if none does.
    ``layout``: as for ``estimate_llama_cpp``."""
    full = options.model_copy(update={"n_gpu_layers": None})
    if layout is None:
        layout = gguf_layout(arch, options.file_type(arch))

    def fits(n_ctx: int) -> bool:
        trial = full.model_copy(update={"n_ctx": n_ctx})
        loaded = estimate_llama_cpp(arch, trial, layout=layout, devices=devices)
        if devices > 1:
            return max(device.total for device in loaded.devices) <= gpu_memory_bytes
        return loaded.gpu_bytes <= gpu_memory_bytes

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

"""Ready-to-run command lines that reproduce an estimate's runtime settings.

Pure functions from options to text; every value is shell-quoted (``shlex.quote``). A flag is left
out when the runtime would pick the same value by itself, and written out when the runtime's own
default depends on the machine (context size, slots, layers), so that what runs is what we
estimated.

Sources (facts only):

- llama-server: the argument table of ``tools/server/README.md`` @
  00dc8057ab28c9cb4c79a6dd6dfce07fe779f63b of https://github.com/ggml-org/llama.cpp —
  ``-c`` (default 0 = the model's training context), ``-b`` 2048, ``-ub`` 512, ``-np`` (default -1 =
  auto), ``-fa on|off|auto`` (default auto), ``-ctk``/``-ctv`` (default f16), ``-ngl N|auto|all``
  (default auto, and ``--fit on`` shrinks any *unset* argument to free memory), ``--swa-full``,
  ``-m FNAME`` and ``-hf <user>/<model>[:quant]``.
- Ollama @ fb30760996871fa9460115c753afd2c60d4ab0f7 of https://github.com/ollama/ollama:
  ``api/types.go`` ``Runner`` (the load-time options a Modelfile ``PARAMETER`` may set: ``num_ctx``,
  ``num_batch``, ``num_gpu``, ``main_gpu``, ``use_mmap``, ``num_thread``) and ``DefaultOptions``
  (``num_batch`` 512, ``num_gpu`` -1 = let llama-server decide); ``llm/llama_server.go`` (llama-server
  gets ``-c num_ctx × OLLAMA_NUM_PARALLEL``, ``-np OLLAMA_NUM_PARALLEL``, ``-b``/``-ub`` both from
  ``num_batch``, ``--cache-type-k``/``--cache-type-v`` both from ``OLLAMA_KV_CACHE_TYPE``, and
  ``--flash-attn`` from ``OLLAMA_FLASH_ATTENTION``, auto when unset); ``envconfig/config.go``
  (``OLLAMA_NUM_PARALLEL`` default 1; ``OLLAMA_CONTEXT_LENGTH`` unset means a context of 4k, 32k or
  256k chosen from the VRAM, ``server/routes.go``); ``docs/modelfile.mdx`` (the Modelfile format).
- vLLM: ``vllm serve`` engine arguments (https://docs.vllm.ai/en/latest/configuration/engine_args/):
  ``--gpu-memory-utilization`` 0.9, ``--kv-cache-dtype`` auto, ``--quantization`` none (read from
  the checkpoint), ``--block-size`` 16 on CUDA, ``--tensor-parallel-size`` 1, ``--enforce-eager``
  off; ``--max-model-len``, ``--max-num-seqs`` and ``--max-num-batched-tokens`` default from the model
  and the GPU (see ``vllm.resolved_defaults``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from calculator.estimator.runtimes.llama_cpp import LlamaCppOptions, TensorOverride
from calculator.estimator.runtimes.vllm import VllmOptions

# llama-server's fixed defaults (README @ 00dc805); -c, -np and -ngl depend on the machine.
LLAMA_SERVER_DEFAULTS = {"n_batch": 2048, "n_ubatch": 512, "cache_type": "f16"}
# Ollama's fixed defaults (api/types.go DefaultOptions, envconfig/config.go @ fb30760).
OLLAMA_NUM_BATCH_DEFAULT = 512
OLLAMA_NUM_PARALLEL_DEFAULT = 1
# The cache types Ollama documents for OLLAMA_KV_CACHE_TYPE (docs/faq.mdx): one type for K and V.
OLLAMA_CACHE_TYPES = frozenset({"f16", "q8_0", "q4_0"})
# vllm serve's fixed defaults (engine arguments page).
VLLM_DEFAULTS = {
    "gpu_memory_utilization": 0.9,
    "kv_cache_dtype": "auto",
    "quantization": "none",
    "block_size": 16,
    "tensor_parallel": 1,
}


def _join(words: list[str]) -> str:
    return " ".join(shlex.quote(word) for word in words)


_ONE_BLOCK = re.compile(r"blk\\\.(\d+)(\\\..*)")


def override_tensors_text(entries: Sequence[TensorOverride]) -> str:
    """``-ot``'s value for ``entries``: comma-separated ``PATTERN=BUFFER``, the entries that
    differ only in their block number (``blk\\.12\\.ffn_…``, ``blk\\.13\\.ffn_…``, as --fit
    writes one per layer) folded into one ``blk\\.(12|13)\\.ffn_…`` that matches the same
    tensors."""
    folded: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        one = _ONE_BLOCK.fullmatch(entry.pattern)
        key = (one.group(2), entry.buffer) if one else (entry.pattern, entry.buffer)
        folded.setdefault(key, [])
        if one:
            folded[key].append(one.group(1))
    parts = []
    for (rest, buffer), blocks in folded.items():
        if not blocks:
            parts.append(f"{rest}={buffer}")
        elif len(blocks) == 1:
            parts.append(rf"blk\.{blocks[0]}{rest}={buffer}")
        else:
            parts.append(rf"blk\.({'|'.join(blocks)}){rest}={buffer}")
    return ",".join(parts)


def llama_split_flags(options: LlamaCppOptions, devices: int) -> list[str]:
    """``-sm``, ``-mg`` and ``-ts`` for ``devices`` GPUs, where they differ from the default
    (``-sm layer`` split by free memory)."""
    if devices < 2:
        return []
    words = []
    if options.split_mode != "layer":
        words += ["-sm", options.split_mode]
    if options.split_mode == "none" and options.main_gpu:
        words += ["-mg", str(options.main_gpu)]
    if options.split_mode == "layer" and options.tensor_split is not None:
        words += ["-ts", ",".join(f"{share:g}" for share in options.tensor_split)]
    return words


def _model_flag(model_ref: str, gguf_type: str | None) -> list[str]:
    """A local ``.gguf`` path loads with ``-m``; anything else is a Hugging Face repository for
    ``-hf``, tagged with the file type unless the reference already names a tag or no type is
    chosen (``-hf`` then takes the repository's Q4_K_M, or its only file)."""
    if model_ref.lower().endswith(".gguf"):
        return ["-m", model_ref]
    if ":" in model_ref or gguf_type is None:
        return ["-hf", model_ref]
    return ["-hf", f"{model_ref}:{gguf_type}"]


def llama_server_command(model_ref: str, options: LlamaCppOptions, devices: int = 1) -> str:
    """The ``llama-server`` command line for ``options``.

    ``-c``, ``-np``, ``-fa`` and ``-ngl`` are always written: their defaults (the model's training
    context, automatic slots, flash attention ``auto``, automatic layers fitted to free memory) are
    not what the estimate assumed. ``-b``, ``-ub`` and the cache types appear only when they differ
    from llama-server's defaults (2048, 512, f16).
    """
    words = ["llama-server", *_model_flag(model_ref, options.gguf_type)]
    words += ["-c", str(options.n_ctx)]
    if options.n_batch != LLAMA_SERVER_DEFAULTS["n_batch"]:
        words += ["-b", str(options.n_batch)]
    if options.n_ubatch != LLAMA_SERVER_DEFAULTS["n_ubatch"]:
        words += ["-ub", str(options.n_ubatch)]
    words += ["-np", str(options.n_parallel)]
    if options.kv_unified:
        words.append("-kvu")
    words += ["-fa", "on" if options.flash_attention else "off"]
    if options.cache_type_k != LLAMA_SERVER_DEFAULTS["cache_type"]:
        words += ["-ctk", options.cache_type_k]
    if options.cache_type_v != LLAMA_SERVER_DEFAULTS["cache_type"]:
        words += ["-ctv", options.cache_type_v]
    words += ["-ngl", "all" if options.n_gpu_layers is None else str(options.n_gpu_layers)]
    if options.swa_full:
        words.append("--swa-full")
    if options.cpu_moe:
        words.append("--cpu-moe")
    elif options.n_cpu_moe:
        words += ["--n-cpu-moe", str(options.n_cpu_moe)]
    if options.override_tensors:
        words += ["-ot", override_tensors_text(options.override_tensors)]
    words += llama_split_flags(options, devices)
    return _join(words)


def ollama_modelfile(model_ref: str, options: LlamaCppOptions) -> str:
    """A Modelfile whose ``PARAMETER`` lines set what Ollama lets a model set at load time.

    ``num_ctx`` is per request slot (Ollama multiplies it by ``OLLAMA_NUM_PARALLEL``), so it is
    ``n_ctx ÷ n_parallel``; it is always written because Ollama's own default depends on the VRAM.
    ``num_batch`` sets both llama-server's ``-b`` and ``-ub``, so it carries ``n_ubatch`` and is left
    out at Ollama's 512. ``num_gpu`` is written only for partial offload; unset, Ollama lets
    llama-server place every layer that fits. Flash attention, the cache types and the number of
    slots are server-wide environment variables (see ``ollama_environment``), not Modelfile
    parameters.
    """
    lines = [f"FROM {model_ref}"]
    lines.append(f"PARAMETER num_ctx {max(options.n_ctx // options.n_parallel, 1)}")
    if options.n_ubatch != OLLAMA_NUM_BATCH_DEFAULT:
        lines.append(f"PARAMETER num_batch {options.n_ubatch}")
    if options.n_gpu_layers is not None:
        lines.append(f"PARAMETER num_gpu {options.n_gpu_layers}")
    return "\n".join(lines) + "\n"


def ollama_environment(options: LlamaCppOptions) -> dict[str, str]:
    """The server environment for ``options``: ``OLLAMA_FLASH_ATTENTION`` (always, since unset
    means auto), ``OLLAMA_KV_CACHE_TYPE`` when the cache is not f16 and ``OLLAMA_NUM_PARALLEL``
    when more than one slot. Ollama takes one cache type for K and V; a K/V pair that differs, or a
    type Ollama does not document, has no Ollama equivalent and is left out (use llama-server)."""
    env = {"OLLAMA_FLASH_ATTENTION": "1" if options.flash_attention else "0"}
    same = options.cache_type_k == options.cache_type_v
    if same and options.cache_type_k != "f16" and options.cache_type_k in OLLAMA_CACHE_TYPES:
        env["OLLAMA_KV_CACHE_TYPE"] = options.cache_type_k
    if options.n_parallel != OLLAMA_NUM_PARALLEL_DEFAULT:
        env["OLLAMA_NUM_PARALLEL"] = str(options.n_parallel)
    return env


def ollama_run_command(model_name: str, options: LlamaCppOptions) -> str:
    """Three lines: start the server with its environment, build the model from ``Modelfile``,
    run it. ``model_name`` is the name given to ``ollama create``."""
    env = ollama_environment(options)
    serve = [f"{key}={shlex.quote(value)}" for key, value in env.items()]
    return "\n".join(
        [
            " ".join([*serve, "ollama", "serve"]),
            _join(["ollama", "create", model_name, "-f", "Modelfile"]),
            _join(["ollama", "run", model_name]),
        ]
    )


def vllm_serve_command(
    model_ref: str, options: VllmOptions, tensor_parallel: int | None = None
) -> str:
    """The ``vllm serve`` command line for ``options`` (``tensor_parallel`` overrides the option's
    own). Flags equal to vLLM's fixed defaults are left out; the model- and GPU-dependent ones
    (``--max-model-len``, ``--max-num-seqs``, ``--max-num-batched-tokens``) are written whenever the
    options set them."""
    tp = options.tensor_parallel if tensor_parallel is None else tensor_parallel
    words = ["vllm", "serve", model_ref]
    if options.gpu_memory_utilization != VLLM_DEFAULTS["gpu_memory_utilization"]:
        words += ["--gpu-memory-utilization", f"{options.gpu_memory_utilization:g}"]
    if options.max_model_len is not None:
        words += ["--max-model-len", str(options.max_model_len)]
    if options.max_num_seqs is not None:
        words += ["--max-num-seqs", str(options.max_num_seqs)]
    if options.max_num_batched_tokens is not None:
        words += ["--max-num-batched-tokens", str(options.max_num_batched_tokens)]
    if options.kv_cache_dtype != VLLM_DEFAULTS["kv_cache_dtype"]:
        words += ["--kv-cache-dtype", options.kv_cache_dtype]
    if options.quantization != VLLM_DEFAULTS["quantization"]:
        words += ["--quantization", options.quantization]
    if options.enforce_eager:
        words.append("--enforce-eager")
    if options.block_size != VLLM_DEFAULTS["block_size"]:
        words += ["--block-size", str(options.block_size)]
    if tp != VLLM_DEFAULTS["tensor_parallel"]:
        words += ["--tensor-parallel-size", str(tp)]
    return _join(words)

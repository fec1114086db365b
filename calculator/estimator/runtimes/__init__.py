"""Memory as the serving runtimes people actually run allocate it.

``llama_cpp`` (also Ollama and LM Studio, which embed it): a GGUF file's tensors under a file type,
and the buffers llama.cpp prints at load. ``vllm``: vLLM's start-up budget and its KV-cache pool.
``commands``: the llama-server, Ollama and ``vllm serve`` command lines that reproduce the options.
Both read an ``Architecture`` through its public fields only and return pydantic results in bytes.
"""

from calculator.estimator.runtimes.commands import (
    llama_server_command,
    ollama_environment,
    ollama_modelfile,
    ollama_run_command,
    vllm_serve_command,
)
from calculator.estimator.runtimes.llama_cpp import (
    GGUF_TYPES,
    DeviceBytes,
    LlamaCppOptions,
    LlamaCppResult,
    estimate_llama_cpp,
    fewest_cpu_moe_layers_that_fit,
    gguf_tensor_types,
    longest_context_full_offload,
    most_gpu_layers_that_fit,
)
from calculator.estimator.runtimes.vllm import (
    VllmOptions,
    VllmResult,
    concurrency_at,
    estimate_vllm,
    longest_max_model_len,
)

__all__ = [
    "GGUF_TYPES",
    "DeviceBytes",
    "LlamaCppOptions",
    "LlamaCppResult",
    "VllmOptions",
    "VllmResult",
    "concurrency_at",
    "estimate_llama_cpp",
    "estimate_vllm",
    "fewest_cpu_moe_layers_that_fit",
    "gguf_tensor_types",
    "llama_server_command",
    "longest_context_full_offload",
    "longest_max_model_len",
    "most_gpu_layers_that_fit",
    "ollama_environment",
    "ollama_modelfile",
    "ollama_run_command",
    "vllm_serve_command",
]

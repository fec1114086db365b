"""Placeholder until the ready-to-run command builders land (issue #13)."""

from __future__ import annotations

import shlex

from calculator.estimator.runtimes.llama_cpp import LlamaCppOptions
from calculator.estimator.runtimes.vllm import VllmOptions


def llama_server_command(model_ref: str, options: LlamaCppOptions) -> str:
    return shlex.join(["llama-server", "-hf", model_ref, "-c", str(options.n_ctx)])


def ollama_modelfile(model_ref: str, options: LlamaCppOptions) -> str:
    return f"FROM {model_ref}\nPARAMETER num_ctx {options.n_ctx}\n"


def vllm_serve_command(model_ref: str, options: VllmOptions, tensor_parallel: int) -> str:
    return shlex.join(["vllm", "serve", model_ref])

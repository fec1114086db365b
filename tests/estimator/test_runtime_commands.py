"""Ready-to-run commands for llama-server, Ollama and vLLM.

Expected strings are written from the runtimes' own documentation, not from the code's output:
llama-server's argument table (ggml-org/llama.cpp tools/server/README.md @ 00dc805: -b 2048, -ub 512,
-ctk/-ctv f16 by default; -c, -np, -fa and -ngl default to values fitted to the machine), Ollama's
Modelfile parameters and environment (ollama/ollama @ fb30760: api/types.go Runner options,
llm/llama_server.go passing -c num_ctx x OLLAMA_NUM_PARALLEL, docs/faq.mdx cache types) and vLLM's
engine arguments page (https://docs.vllm.ai/en/latest/configuration/engine_args/).
"""

from calculator.estimator.runtimes.commands import (
    llama_server_command,
    ollama_environment,
    ollama_modelfile,
    ollama_run_command,
    vllm_serve_command,
)
from calculator.estimator.runtimes.llama_cpp import OLLAMA_DEFAULTS, LlamaCppOptions
from calculator.estimator.runtimes.vllm import VllmOptions

GIB = 1 << 30


def test_llama_server_defaults_write_only_the_machine_dependent_flags():
    # No file type chosen: -hf without a tag takes the repository's Q4_K_M, else its first file
    # (common/arg.cpp @ 0c1e570: "quant is optional, case-insensitive, default to Q4_K_M").
    command = llama_server_command("bartowski/Qwen2.5-7B-Instruct-GGUF", LlamaCppOptions())
    assert command == (
        "llama-server -hf bartowski/Qwen2.5-7B-Instruct-GGUF -c 4096 -np 4 -fa on -ngl all"
    )
    tagged = LlamaCppOptions(gguf_type="Q4_K_M")
    assert llama_server_command("bartowski/Qwen2.5-7B-Instruct-GGUF", tagged) == (
        "llama-server -hf bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M -c 4096 -np 4 -fa on -ngl all"
    )


def test_llama_server_unified_kv_cache_is_asked_for():
    # -np N turns the unified cache off unless -kvu asks for it (common/arg.cpp @ 0c1e570:
    # "default: enabled if number of slots is auto").
    command = llama_server_command("ggml-org/gpt-oss-20b-GGUF", LlamaCppOptions(kv_unified=True))
    assert " -np 4 -kvu -fa on " in command


def test_llama_server_every_option():
    options = LlamaCppOptions(
        gguf_type="Q8_0",
        n_ctx=32768,
        n_batch=1024,
        n_ubatch=256,
        n_parallel=1,
        flash_attention=False,
        cache_type_k="q8_0",
        cache_type_v="q4_0",
        n_gpu_layers=20,
        swa_full=True,
    )
    command = llama_server_command("/models/my model.gguf", options)
    assert command == (
        "llama-server -m '/models/my model.gguf' -c 32768 -b 1024 -ub 256 -np 1 -fa off "
        "-ctk q8_0 -ctv q4_0 -ngl 20 --swa-full"
    )


def test_llama_server_keeps_a_tag_the_user_chose():
    command = llama_server_command("unsloth/phi-4-GGUF:q4_k_m", LlamaCppOptions(n_gpu_layers=0))
    assert command.startswith("llama-server -hf unsloth/phi-4-GGUF:q4_k_m ")
    assert command.endswith(" -ngl 0")


def test_ollama_modelfile_per_slot_context():
    # Ollama passes -c num_ctx x OLLAMA_NUM_PARALLEL: 16384 tokens over 4 slots is num_ctx 4096.
    options = LlamaCppOptions(n_ctx=16384, n_parallel=4, n_ubatch=1024, n_gpu_layers=30)
    assert ollama_modelfile("qwen2.5:7b", options) == (
        "FROM qwen2.5:7b\nPARAMETER num_ctx 4096\nPARAMETER num_batch 1024\nPARAMETER num_gpu 30\n"
    )


def test_ollama_modelfile_leaves_out_its_defaults():
    # num_batch 512 is Ollama's default; num_gpu unset lets llama-server place the layers.
    assert ollama_modelfile("llama3.1:8b", OLLAMA_DEFAULTS) == (
        "FROM llama3.1:8b\nPARAMETER num_ctx 4096\n"
    )


def test_ollama_environment_and_run_command():
    options = LlamaCppOptions(
        flash_attention=True, cache_type_k="q8_0", cache_type_v="q8_0", n_parallel=2
    )
    assert ollama_environment(options) == {
        "OLLAMA_FLASH_ATTENTION": "1",
        "OLLAMA_KV_CACHE_TYPE": "q8_0",
        "OLLAMA_NUM_PARALLEL": "2",
    }
    assert ollama_run_command("my-qwen", options) == (
        "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_NUM_PARALLEL=2 ollama serve\n"
        "ollama create my-qwen -f Modelfile\n"
        "ollama run my-qwen"
    )


def test_ollama_cannot_split_cache_types():
    # OLLAMA_KV_CACHE_TYPE sets K and V together; q8_0 K with q4_0 V has no Ollama equivalent.
    options = LlamaCppOptions(cache_type_k="q8_0", cache_type_v="q4_0", n_parallel=1)
    assert ollama_environment(options) == {"OLLAMA_FLASH_ATTENTION": "1"}


def test_vllm_defaults_are_left_out():
    options = VllmOptions(gpu_memory_bytes=80 * GIB)
    assert vllm_serve_command("meta-llama/Llama-3.1-8B-Instruct", options) == (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct"
    )


def test_vllm_every_option():
    options = VllmOptions(
        gpu_memory_bytes=80 * GIB,
        gpu_memory_utilization=0.95,
        max_model_len=32768,
        max_num_seqs=64,
        max_num_batched_tokens=4096,
        kv_cache_dtype="fp8",
        quantization="awq",
        enforce_eager=True,
        block_size=32,
    )
    command = vllm_serve_command("Qwen/Qwen2.5-32B-Instruct-AWQ", options, tensor_parallel=2)
    assert command == (
        "vllm serve Qwen/Qwen2.5-32B-Instruct-AWQ --gpu-memory-utilization 0.95 "
        "--max-model-len 32768 --max-num-seqs 64 --max-num-batched-tokens 4096 "
        "--kv-cache-dtype fp8 --quantization awq --enforce-eager --block-size 32 "
        "--tensor-parallel-size 2"
    )


def test_vllm_tensor_parallel_from_the_options():
    options = VllmOptions(gpu_memory_bytes=80 * GIB, tensor_parallel=4)
    assert vllm_serve_command("org/model with space", options) == (
        "vllm serve 'org/model with space' --tensor-parallel-size 4"
    )

"""Compare what ``estimate`` and ``estimate_speed`` return for thousands of random requests
before and after a restructuring of the estimator (issue 26), without Django.

    .venv/bin/python validation/estimator_sweep.py record /tmp/sweep.pickle [N]
    .venv/bin/python validation/estimator_sweep.py compare /tmp/sweep.pickle    # exit 1 on a change

The requests come from a fixed seed: every catalogue config (``presets/models/*.json``, with
made-up safetensors dtypes for the pre-quantized ones now and then) and custom shapes, in every
mode, runtime (transformers, llama.cpp, vLLM), precision, optimizer and implementation, loss,
checkpointing, offload and sequence-parallel switch, training stack, LoRA rank and targets,
attention kernel, image count, and tensor, pipeline and context parallelism with ZeRO stages and
micro-batches. Requests the schema refuses are drawn again. Each outcome is the result's
``model_dump()`` (or the error's type and message) and, where the estimate succeeds, the speed on
one of a few GPUs. ``compare`` redraws the same requests, checks they are the ones recorded and
lists every outcome that differs.
"""

from __future__ import annotations

import json
import pickle
import random
import sys
from pathlib import Path
from typing import Any, get_args

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import ValidationError  # noqa: E402

from calculator.estimator import (  # noqa: E402
    ConfigModel,
    CustomModel,
    EstimateRequest,
    estimate,
    resolve_architecture,
)
from calculator.estimator.lora import ALL_LINEAR  # noqa: E402
from calculator.estimator.runtimes.llama_cpp import CacheType, GgufType  # noqa: E402
from calculator.estimator.schemas import Optimizer  # noqa: E402
from calculator.estimator.speed import GpuPerformance, estimate_speed  # noqa: E402
from calculator.estimator.stacks import STACKS  # noqa: E402

SEED = 26
MODES = ["inference", "full_finetune", "lora", "qlora", "pretrain"]
PRECISIONS = ["bf16", "fp16", "fp32", "fp8", "int8", "int4", "int2"]
GPUS = [
    GpuPerformance(
        bandwidth_gb_s=3350,
        bf16_tflops=989,
        fp8_tflops=1979,
        int8_tops=1979,
        interconnect="nvlink",
        interconnect_gb_s=450,
        count=8,
        memory_type="HBM3",
    ),
    GpuPerformance(
        bandwidth_gb_s=1008, bf16_tflops=165, fp16_tflops=165, count=1, memory_type="GDDR6X"
    ),
    GpuPerformance(
        bandwidth_gb_s=1555,
        bf16_tflops=312,
        interconnect="pcie",
        interconnect_gb_s=32,
        count=4,
        memory_type="HBM2e",
    ),
    GpuPerformance(bandwidth_gb_s=400, count=1, unified_memory=True, vendor="apple"),
    GpuPerformance(
        bandwidth_gb_s=5300, bf16_tflops=1307, count=2, vendor="amd", memory_type="HBM3"
    ),
]


def configs() -> list[dict[str, Any]]:
    found = []
    for path in sorted((ROOT / "presets" / "models").glob("*.json")):
        for preset in json.loads(path.read_text())["presets"]:
            found.append(preset["config"])
    return found


def _maybe(rng: random.Random, value: Any, p: float = 0.5) -> Any:
    return value if rng.random() < p else None


def _model(rng: random.Random, catalogue: list[dict[str, Any]]) -> ConfigModel | CustomModel:
    if rng.random() < 0.85:
        config = rng.choice(catalogue)
        dtypes = None
        if "quantization_config" in config and rng.random() < 0.6:
            dtypes = {"BF16": rng.randint(10**8, 10**10), rng.choice(["F8_E4M3", "U8", "I32"]): rng.randint(10**9, 10**11)}  # fmt: skip
        return ConfigModel(config=config, checkpoint_dtypes=dtypes)
    return CustomModel(
        params_billion=rng.choice([0.5, 1.3, 7, 13, 47, 70]),
        num_layers=_maybe(rng, rng.choice([12, 24, 32, 40])),
        hidden_size=_maybe(rng, rng.choice([1024, 2048, 4096])),
        num_kv_heads=_maybe(rng, rng.choice([1, 2, 8])),
        intermediate_size=_maybe(rng, rng.choice([4096, 11008, 14336]), 0.3),
        vocab_size=_maybe(rng, rng.choice([32000, 128256])),
        num_experts=rng.choice([None, None, 8]),
        experts_per_token=2,
        tie_word_embeddings=rng.random() < 0.3,
    )


def _request(rng: random.Random, catalogue: list[dict[str, Any]]) -> EstimateRequest:
    mode = rng.choice(MODES)
    runtime = "transformers"
    if mode == "inference" and rng.random() < 0.4:
        runtime = rng.choice(["llama_cpp", "vllm"])
    tp = rng.choice([1, 1, 1, 2, 4])
    pp = rng.choice([1, 1, 1, 2, 3, 4]) if mode != "inference" else 1
    cp = rng.choice([1, 1, 1, 2, 4]) if mode != "inference" else 1
    dp = rng.choice([1, 1, 2, 4])
    num_gpus = 1 if runtime == "llama_cpp" else tp * pp * cp * dp
    seq = rng.choice([128, 512, 1024, 2048, 4096, 8192, 32768])
    fields: dict[str, Any] = {
        "model": _model(rng, catalogue),
        "mode": mode,
        "runtime": runtime,
        "precision": rng.choice(PRECISIONS),
        "mixed_precision": rng.random() < 0.3,
        "optimizer": rng.choice(get_args(Optimizer)),
        "batch_size": rng.choice([1, 1, 2, 4, 8, 16]),
        "seq_len": seq,
        "gradient_checkpointing": rng.random() < 0.3,
        "training_stack": rng.choice(list(STACKS)),
        "optimizer_impl": _maybe(rng, rng.choice(["fused", "foreach", "for_loop"]), 0.3),
        "loss": _maybe(rng, rng.choice(["full", "chunked", "fused_linear"]), 0.3),
        "activation_checkpointing": _maybe(rng, rng.choice(["none", "full", "selective"]), 0.3),
        "activation_offloading": _maybe(rng, rng.random() < 0.5, 0.2),
        "optimizer_offload": _maybe(rng, rng.random() < 0.5, 0.2),
        "parameter_offload": _maybe(rng, rng.random() < 0.5, 0.2),
        "sequence_parallel": _maybe(rng, rng.random() < 0.5, 0.2),
        "attention": rng.choice(["flash", "flash", "eager"]),
        "kv_cache_precision": _maybe(
            rng, rng.choice(["bf16", "fp16", "fp32", "fp8", "int8", "int4"]), 0.3
        ),
        "lora": {
            "rank": rng.choice([4, 16, 64]),
            "targets": rng.choice(
                ["all-linear", sorted(rng.sample(ALL_LINEAR, rng.randint(1, 4)))]
            ),
        },
        "num_gpus": num_gpus,
        "zero_stage": rng.choice([0, 1, 2, 3]) if mode != "inference" else 0,
        "tensor_parallel": tp,
        "pipeline_parallel": pp,
        "context_parallel": cp,
        "micro_batches": _maybe(rng, rng.choice([1, 2, 4, 8, 16]), 0.4),
        "images_per_request": _maybe(rng, rng.choice([0, 1, 3]), 0.4),
        "prompt_tokens": _maybe(rng, rng.choice([128, 1024, 4096]), 0.3),
        "train_tokens": _maybe(rng, rng.choice([1e8, 1e9, 1e10]), 0.5),
        "price_per_gpu_hour": _maybe(rng, rng.choice([0.0, 1.5, 3.0]), 0.5),
        "host_memory_bandwidth_gb_s": _maybe(rng, rng.choice([50.0, 100.0, 400.0]), 0.3),
    }
    if runtime == "llama_cpp" and rng.random() < 0.7:
        fields["llama_cpp"] = {
            "gguf_type": rng.choice(get_args(GgufType)),
            "n_ctx": rng.choice([512, 4096, 32768, 131072]),
            "n_ubatch": rng.choice([128, 512]),
            "n_parallel": rng.choice([1, 4]),
            "flash_attention": rng.random() < 0.7,
            "cache_type_k": rng.choice(get_args(CacheType)),
            "cache_type_v": rng.choice(get_args(CacheType)),
            "n_gpu_layers": _maybe(rng, rng.choice([0, 8, 24, 99]), 0.5),
            "swa_full": rng.random() < 0.2,
        }
    if runtime == "vllm":
        fields["vllm"] = {
            "gpu_memory_bytes": rng.choice([24, 40, 80, 141]) * 2**30,
            "gpu_memory_utilization": rng.choice([0.8, 0.9, 0.95]),
            "max_model_len": _maybe(rng, rng.choice([4096, 32768]), 0.5),
            "max_num_seqs": _maybe(rng, rng.choice([16, 256]), 0.3),
            "kv_cache_dtype": rng.choice(["auto", "fp8"]),
            "quantization": _maybe(
                rng, rng.choice(["none", "fp8", "awq", "gptq", "bitsandbytes", "mxfp4"]), 0.4
            ),
            "enforce_eager": rng.random() < 0.3,
        }
    return EstimateRequest.model_validate(fields)


def requests(count: int) -> list[EstimateRequest]:
    rng = random.Random(SEED)
    catalogue = configs()
    drawn: list[EstimateRequest] = []
    while len(drawn) < count:
        try:
            drawn.append(_request(rng, catalogue))
        except ValidationError:
            continue
    return drawn


def outcome(request: EstimateRequest, index: int) -> Any:
    try:
        result = estimate(request)
    except Exception as error:
        return ("error", type(error).__name__, str(error))
    gpu = GPUS[index % len(GPUS)]
    try:
        speed = estimate_speed(
            resolve_architecture(request.model),
            request,
            result,
            gpu,
            runtime=request.runtime,
            llama_cpp=result.llama_cpp,
            vllm=result.vllm,
            prompt_tokens=request.prompt_tokens,
            train_tokens=request.train_tokens,
            price_per_gpu_hour=request.price_per_gpu_hour,
            host_memory_bandwidth_gb_s=request.host_memory_bandwidth_gb_s,
        ).model_dump()
    except Exception as error:
        speed = ("error", type(error).__name__, str(error))
    return (result.model_dump(), speed)


def main(argv: list[str]) -> int:
    if len(argv) not in {3, 4} or argv[1] not in {"record", "compare"}:
        print(__doc__)
        return 2
    path = Path(argv[2])
    if argv[1] == "record":
        drawn = requests(int(argv[3]) if len(argv) == 4 else 4000)
        found = [(r.model_dump_json(), outcome(r, i)) for i, r in enumerate(drawn)]
        path.write_bytes(pickle.dumps(found))
        errors = sum(1 for _, got in found if got[0] == "error")
        print(f"{len(found)} requests recorded in {path} ({errors} refused by the estimator)")
        return 0
    recorded = pickle.loads(path.read_bytes())
    drawn = requests(len(recorded))
    differ = 0
    for i, (request, (key, expected)) in enumerate(zip(drawn, recorded, strict=True)):
        if request.model_dump_json() != key:
            print(f"request {i} is not the one recorded: the generator changed")
            return 2
        if outcome(request, i) != expected:
            differ += 1
            print(f"differs: request {i}: {key[:200]}")
    print(f"{len(recorded)} requests compared: {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

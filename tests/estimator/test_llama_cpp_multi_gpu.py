"""llama.cpp on several GPUs of one machine (issue 28): the layer split, each device's buffers,
the pipeline's copies of its inputs, and the request that asks for them.

Expected values are hand calculations from llama.cpp's rules, written out per test:
src/llama-model.cpp ``load_tensors`` @ 0c1e570 cumulates the shares (``-ts``, else each device's
free memory), normalises them into split points in ``float`` and gives layer slot ``j`` of
``n`` (the output layer is the last slot) to the first device whose point is above ``j / n``;
src/llama-context.cpp runs the devices as a pipeline, with ``GGML_SCHED_MAX_COPIES`` (4)
copies of each split's inputs, when every layer is offloaded over several devices with
``-sm layer`` and no tensor override.
"""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from calculator.estimator import EstimateRequest, estimate
from calculator.estimator.runtimes.llama_cpp import (
    LlamaCppOptions,
    device_buffers,
    estimate_llama_cpp,
    gguf_layout,
    layer_split,
)
from validation.runtime_logs import architecture, preset_configs

MIB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]


def llama3_8b():
    return architecture("llama-3-8b")  # 32 layers, hidden 4096, 8 KV heads of 128


def test_equal_gpus_split_the_slots_at_their_halves():
    # 33 slots (32 layers and the output layer), points 0.5 and 1: slot j goes to GPU 1 from
    # j / 33 >= 0.5, i.e. j = 17 on. GPU 0 holds slots 0..16.
    assert layer_split(33, 2) == [17, 16]
    # Three equal cards, 81 slots (Llama 3 70B): points 1/3, 2/3, 1; j = 27 and 54 sit on the
    # points themselves and go to the next card (upper_bound), 27 slots each.
    assert layer_split(81, 3) == [27, 27, 27]


def test_shares_follow_tensor_split_or_free_memory():
    # -ts 3,1: points 0.75 and 1; j / 81 < 0.75 for j <= 60, so 61 and 20.
    assert layer_split(81, 2, [3, 1]) == [61, 20]
    # A 24 GiB card beside a 12 GiB one, split by free memory: points 2/3 and 1; slot 54 is
    # 54/81 = 2/3 exactly, the point itself, and goes to the second card: 54 and 27.
    assert layer_split(81, 2, [24 << 30, 12 << 30]) == [54, 27]
    # A zero share gets no layer.
    assert layer_split(33, 3, [1, 0, 1]) == [17, 0, 16]


def test_two_gpus_hold_what_one_would_plus_the_pipelines_copies():
    arch = llama3_8b()
    options = LlamaCppOptions(gguf_type="Q4_K_M", n_ctx=8192, n_parallel=1)
    one = estimate_llama_cpp(arch, options)
    two = estimate_llama_cpp(arch, options, devices=2)
    assert [device.layers for device in two.devices] == [17, 16]
    # The slices add up to the single GPU's model and KV buffers, and the model buffer's total.
    assert sum(device.model for device in two.devices) == one.model_buffer.gpu
    assert sum(device.kv for device in two.devices) == one.kv_buffer.gpu
    assert two.model_buffer == one.model_buffer
    # KV: 2 (K and V) x 8 heads x 128 x 2 bytes (f16) x 8192 cells = 32 MiB per layer;
    # GPU 0 has layers 0..16, GPU 1 layers 17..31 and the output layer.
    assert [device.kv for device in two.devices] == [17 * 32 * MIB, 15 * 32 * MIB]
    # Each device reserves its part of the graph: GPU 0 its layers' largest phase, the
    # feed-forward's 4 bytes x 512 tokens x (2 x 14,336 + 2 x 4,096) = 72 MiB; GPU 1, which holds
    # the output layer, the logits' 4 x 512 x (128,256 + 4,096) bytes (what one GPU reserves).
    # As a pipeline each adds three more copies of its inputs: the hidden state (4 bytes x 512
    # tokens x 4096) = 8 MiB and the f16 KQ mask (2 bytes x 8192 cells x 512) = 8 MiB, 16 MiB a
    # copy.
    logits = 4 * 512 * (128_256 + 4_096)
    assert one.compute_buffer.gpu == logits
    assert [device.compute for device in two.devices] == [
        72 * MIB + 3 * 16 * MIB,
        logits + 3 * 16 * MIB,
    ]


def test_no_pipeline_with_layers_on_the_cpu_or_experts_in_ram():
    arch = llama3_8b()
    partial = LlamaCppOptions(gguf_type="Q4_K_M", n_ctx=8192, n_parallel=1, n_gpu_layers=20)
    single = estimate_llama_cpp(arch, partial).compute_buffer.gpu
    devices = estimate_llama_cpp(arch, partial, devices=2).devices
    assert [device.layers for device in devices] == [10, 10]
    # No pipeline copies: GPU 0 reserves its layers' 72 MiB feed-forward phase (as in the test
    # above), GPU 1, with the output layer, what the single GPU reserves.
    assert [device.compute for device in devices] == [72 * MIB, single]
    moe = architecture("qwen3-30b-a3b")  # a preset of the catalogue
    experts = LlamaCppOptions(gguf_type="Q4_K_M", n_ctx=4096, n_parallel=1, n_cpu_moe=4)
    single = estimate_llama_cpp(moe, experts).compute_buffer.gpu
    first, last = estimate_llama_cpp(moe, experts, devices=2).devices
    assert last.compute == single
    assert first.compute < single


def test_split_mode_none_keeps_every_layer_on_the_main_gpu():
    arch = llama3_8b()
    options = LlamaCppOptions(gguf_type="Q4_K_M", split_mode="none", main_gpu=1)
    devices = device_buffers(arch, gguf_layout(arch, "Q4_K_M"), options, 2)
    assert [device.layers for device in devices] == [0, 33]
    assert devices[0].total == 0
    assert devices[1].model == estimate_llama_cpp(arch, options).model_buffer.gpu


def _request(**changes):
    return EstimateRequest.model_validate(
        {
            "model": {"config": preset_configs()["llama-3-8b"]},
            "runtime": "llama_cpp",
            "num_gpus": 2,
            "llama_cpp": {"gguf_type": "Q4_K_M", "n_ctx": 8192, "n_parallel": 1},
            **changes,
        }
    )


def test_the_estimate_is_per_gpu_the_one_that_runs_out_first():
    options = {"gguf_type": "Q4_K_M", "n_ctx": 8192, "n_parallel": 1}
    base = {
        "model": {"config": preset_configs()["llama-3-8b"]},
        "runtime": "llama_cpp",
        "num_gpus": 2,
        "llama_cpp": options,
    }
    result = estimate(EstimateRequest.model_validate(base))
    assert result.llama_cpp is not None
    devices = result.llama_cpp.devices
    fullest = max(devices, key=lambda device: device.total)
    assert result.total_bytes == fullest.total + result.breakdown.cuda_context
    assert result.breakdown.weights == fullest.model
    # A 12 GiB card as the first of a pair with a 24 GiB one: by free memory it takes a third
    # of the slots (11 of 33), and it is still the one with less room left.
    small_first = {
        **base,
        "llama_cpp": {**options, "device_memory_bytes": [12 << 30, 24 << 30]},
    }
    split = estimate(EstimateRequest.model_validate(small_first)).llama_cpp
    assert split is not None
    devices = split.devices
    assert [device.layers for device in devices] == [11, 22]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tensor_parallel": 2}, "set tensor_parallel to 1"),
        ({"llama_cpp": {"tensor_split": [1, 1, 1]}}, "tensor_split has 3 values for 2 GPU(s)"),
        ({"llama_cpp": {"tensor_split": [0, 0]}}, "needs one share above 0"),
        ({"llama_cpp": {"main_gpu": 2}}, "main_gpu must be below num_gpus (2)"),
    ],
)
def test_a_split_that_cannot_be_is_refused(changes, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _request(**changes)


COLLECTED = json.loads((ROOT / "validation/published/llama_cpp_multigpu_logs.json").read_text())
# The logs whose model, file and settings are known (each entry's ``why`` says what the others
# lack).
LOGS = [log for log in COLLECTED["logs"] if log["compare"]]


def _per_device(log: dict) -> list[tuple[str, str, float, float]]:
    """(device, buffer, ours in MiB, the log's MiB) for the buffers the entry compares."""
    free = log.get("gpu_free_mib")
    options = LlamaCppOptions.model_validate(
        {**log["options"], **({"device_memory_bytes": [m * MIB for m in free]} if free else {})}
    )
    result = estimate_llama_cpp(architecture(log["preset"]), options, devices=len(log["gpus"]))
    rows = []
    for device in result.devices:
        printed = log["buffers_mib"][device.name]
        for part in log["compare"]:
            rows.append((device.name, part, getattr(device, part) / MIB, printed[part]))
    return rows


@pytest.mark.parametrize("log", LOGS, ids=[log["id"] for log in LOGS])
def test_each_device_holds_what_its_log_prints(log):
    """Published multi-GPU logs (validation/published/llama_cpp_multigpu_logs.json, each with its
    thread): the KV cache per device follows from the layer split, so it is exact to the log's
    rounding; the model and compute buffers of the mainline log are within 1% and 2%."""
    bounds = {"kv": 0.001, "model": 0.01, "compute": 0.02}
    for device, part, ours, theirs in _per_device(log):
        assert abs(ours - theirs) / theirs <= bounds[part], (device, part, ours, theirs)

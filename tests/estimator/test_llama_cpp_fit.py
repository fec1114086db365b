"""Tensor overrides (``-ot``) and what llama.cpp's ``--fit`` chooses (issue 28).

Sources for the expected values, per test:
- ik_llama.cpp discussion #370 (validation/published/llama_cpp_moe_offload_runs.json, id
  ``ik370-a6000-qwen3-235b-q8-ot``): Qwen3-235B-A22B Q8_0 on an RTX A6000 with ``-ngl 99
  -ot blk\\.1[4-9]\\.ffn.*=CPU -ot blk\\.[2-9][0-9]\\.ffn.*=CPU`` printed a CUDA0 model buffer of
  41723.89 MiB;
- common/arg.cpp and common/common.h (ggml-org/llama.cpp @ 0c1e570): ``--cpu-moe`` is the one
  override ``\\.ffn_(up|down|gate|gate_up)_(ch|)exps`` → CPU and ``--n-cpu-moe N`` is that
  pattern behind ``blk\\.<i>`` for i < N, so an ``-ot`` list that spells them out is the same
  placement;
- common/fit.cpp @ 0c1e570 for ``--fit``: nothing changes when every device keeps its
  ``--fit-target`` (1024 MiB) free; a dense model gets the most layers that keep it; a MoE
  model keeps every layer on the GPU with the routed experts of its last layers in RAM; the
  user's ``-ngl``, ``-ts`` or overrides make it give up; with ``-c`` unset the context is
  interpolated linearly and rounded down to 256 per stream.
"""

from typing import Any

import pytest
from pydantic import ValidationError

from calculator.estimator.runtimes.commands import llama_server_command, override_tensors_text
from calculator.estimator.runtimes.llama_cpp import (
    LlamaCppOptions,
    OverrideError,
    TensorOverride,
    estimate_llama_cpp,
    parse_override_tensors,
)
from calculator.estimator.runtimes.llama_cpp_fit import FIT_TARGET_BYTES, fit_params
from validation.runtime_logs import architecture

MIB, GIB = 1 << 20, 1 << 30


# --- -ot -----------------------------------------------------------------------------------
def test_the_published_override_log_is_matched():
    arch = architecture("qwen3-235b-a22b")
    options = LlamaCppOptions(
        gguf_type="Q8_0",
        n_ctx=32768,
        n_parallel=1,
        cache_type_k="q8_0",
        cache_type_v="q8_0",
        override_tensors=parse_override_tensors(
            r"blk\.1[4-9]\.ffn.*=CPU,blk\.[2-9][0-9]\.ffn.*=CPU"
        ),
    )
    gpu_model = estimate_llama_cpp(arch, options).model_buffer.gpu / MIB
    assert gpu_model == pytest.approx(41723.89, rel=0.01)  # ik_llama.cpp #370's CUDA0 line


def test_spelled_out_overrides_place_what_the_expert_flags_place():
    arch = architecture("gpt-oss-20b")  # 24 layers
    flags = LlamaCppOptions(n_ctx=4096, n_parallel=1, n_cpu_moe=14)
    spelled = LlamaCppOptions(
        n_ctx=4096,
        n_parallel=1,
        override_tensors=parse_override_tensors(
            r"blk\.([0-9]|1[0-3])\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU"
        ),
    )
    assert estimate_llama_cpp(arch, spelled) == estimate_llama_cpp(arch, flags)
    every = LlamaCppOptions(n_ctx=4096, n_parallel=1, cpu_moe=True)
    exps = LlamaCppOptions(
        n_ctx=4096, n_parallel=1, override_tensors=parse_override_tensors("exps=CPU")
    )
    assert estimate_llama_cpp(arch, exps) == estimate_llama_cpp(arch, every)


def test_an_override_moves_only_what_it_names():
    arch = architecture("gpt-oss-20b")
    base = LlamaCppOptions(n_ctx=4096, n_parallel=1)
    up_only = base.model_copy(
        update={"override_tensors": parse_override_tensors("ffn_up_exps=CPU")}
    )
    every = base.model_copy(update={"cpu_moe": True})
    whole = estimate_llama_cpp(arch, base).model_buffer
    up = estimate_llama_cpp(arch, up_only).model_buffer
    experts = estimate_llama_cpp(arch, every).model_buffer
    # gpt-oss keeps gate, up and down experts in MXFP4, each hidden × intermediate per expert
    # (2880 × 2880 × 32 × 24 layers): the up projections are a third of the experts' bytes.
    moved_all = whole.gpu - experts.gpu
    assert whole.gpu - up.gpu == pytest.approx(moved_all / 3, rel=1e-6)
    # Nothing matched, nothing moved: the host gets no duplicate.
    none = base.model_copy(
        update={"override_tensors": parse_override_tensors("no_such_tensor=CPU")}
    )
    assert estimate_llama_cpp(arch, none).model_buffer == whole


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("exps", "syntax"),  # no =BUFFER
        ("exps=CUDA1", "buffer"),  # another device: not modelled
        ("blk\\.(=CPU", "regex"),  # an unclosed group
        ("(a+)+=CPU", "nested"),  # exponential backtracking
        ("(x|xx)*=CPU", "nested"),
    ],
)
def test_an_unreadable_override_says_what_is_wrong(text, kind):
    with pytest.raises(OverrideError) as caught:
        parse_override_tensors(text)
    assert caught.value.kind == kind
    if kind in ("regex", "nested"):  # the API's JSON entries are checked the same way
        with pytest.raises(ValidationError):
            TensorOverride(pattern=text.split("=")[0])


def test_the_command_folds_per_layer_overrides():
    entries = parse_override_tensors(
        r"blk\.12\.ffn_down.*=CPU,blk\.13\.ffn_.*_exps=CPU,blk\.14\.ffn_.*_exps=CPU"
    )
    assert (
        override_tensors_text(entries) == r"blk\.12\.ffn_down.*=CPU,blk\.(13|14)\.ffn_.*_exps=CPU"
    )
    options = LlamaCppOptions(
        n_ctx=4096, n_parallel=1, override_tensors=entries, tensor_split=(3, 1)
    )
    command = llama_server_command("m.gguf", options, devices=2)
    assert "-ot 'blk\\.12\\.ffn_down.*=CPU,blk\\.(13|14)\\.ffn_.*_exps=CPU'" in command
    assert command.endswith("-ts 3,1")


# --- --fit ---------------------------------------------------------------------------------
def test_settings_that_fit_are_left_alone():
    arch = architecture("qwen3-30b-a3b")
    options = LlamaCppOptions(n_ctx=8192, n_parallel=1)
    need = estimate_llama_cpp(arch, options).gpu_bytes
    # Exactly the margin left: --fit's test is free − used ≥ target.
    fitted = fit_params(arch, options, [need + FIT_TARGET_BYTES])
    assert fitted.status == "unchanged"
    assert fitted.flags() == ["-c", "8192", "-ngl", "all"]
    assert fit_params(arch, options, [need + FIT_TARGET_BYTES - 1]).status == "fitted"


def test_a_dense_model_gets_the_most_layers_that_keep_the_margin():
    arch = architecture("llama-3.3-70b")  # 80 layers + the output layer
    options = LlamaCppOptions(n_ctx=8192, n_parallel=1)
    free = 23 * GIB
    fitted = fit_params(arch, options, [free])
    ngl = fitted.options.n_gpu_layers
    assert fitted.status == "fitted"
    assert ngl is not None
    assert 0 < ngl < 81
    target = free - FIT_TARGET_BYTES

    def used(n):
        return estimate_llama_cpp(arch, options.model_copy(update={"n_gpu_layers": n})).gpu_bytes

    # The lower bound that just barely still fits (common/fit.cpp, false position).
    assert used(ngl) <= target < used(ngl + 1)
    assert fitted.devices[0].used_bytes == used(ngl)


def test_a_moe_model_keeps_every_layer_with_the_last_experts_in_ram():
    arch = architecture("gpt-oss-120b")  # 36 layers
    options = LlamaCppOptions(n_ctx=32768, n_parallel=1)
    free = 23 * GIB
    fitted = fit_params(arch, options, [free])
    assert fitted.status == "fitted"
    assert fitted.fits
    assert fitted.options.n_gpu_layers == 37  # every layer and the output layer
    blocks = [int(e.pattern.split("\\.")[1]) for e in fitted.options.override_tensors]
    # Contiguous, ending at the output layer's slot (index 36, which names no tensor).
    assert blocks == list(range(blocks[0], 37))
    # Every layer's experts but the partial one's are whole in RAM, the partial one's first.
    assert all(e.pattern.endswith("_(ch|)exps") for e in fitted.options.override_tensors[1:])
    assert fitted.experts_in_ram_layers == 36 - blocks[0]
    # One layer's experts fewer in RAM would not keep the margin: the --n-cpu-moe with the
    # same number of layers is the same placement (gpt-oss layers are alike) and one less
    # breaks the target.
    target = free - FIT_TARGET_BYTES
    n = 36 - blocks[0]
    fewer = estimate_llama_cpp(arch, options.model_copy(update={"n_cpu_moe": n - 1}))
    assert fewer.gpu_bytes > target
    assert fitted.devices[0].used_bytes <= target


def test_fit_gives_up_on_what_the_user_set():
    arch = architecture("gpt-oss-120b")
    small = [12 * GIB]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"n_gpu_layers": 30}, "n_gpu_layers"),
        ({"n_cpu_moe": 4}, "overrides"),
        ({"override_tensors": parse_override_tensors("ffn_up_exps=CPU")}, "overrides"),
    ]
    for changes, reason in cases:
        options = LlamaCppOptions(n_ctx=8192, n_parallel=1, **changes)
        fitted = fit_params(arch, options, small)
        assert (fitted.status, fitted.reason) == ("refused", reason)
        assert fitted.options == options.for_model(arch)
    two = LlamaCppOptions(n_ctx=8192, n_parallel=1, tensor_split=(1, 1))
    assert fit_params(arch, two, [12 * GIB, 12 * GIB]).reason == "tensor_split"


def test_an_unset_context_shrinks_by_linear_interpolation():
    arch = architecture("llama-3.1-8b")  # trained for 131072 tokens
    options = LlamaCppOptions(n_parallel=1)
    free = 12 * GIB
    fitted = fit_params(arch, options, [free], n_ctx_auto=True, n_ctx_train=131072)
    assert fitted.status == "context"

    def used(n_ctx):
        return estimate_llama_cpp(arch, options.model_copy(update={"n_ctx": n_ctx})).gpu_bytes

    # common/fit.cpp step 2, written out: 4096 + (131072 − 4096) × (target − used(4096)) /
    # (used(131072) − used(4096)), rounded down to a multiple of 256.
    target = free - FIT_TARGET_BYTES
    low, high = used(4096), used(131072)
    expected = 4096 + (131072 - 4096) * (target - low) // (high - low)
    expected -= expected % 256
    assert fitted.options.n_ctx == expected
    assert 4096 < expected < 131072


def test_two_gpus_split_by_the_layers_each_holds():
    arch = architecture("llama-3.3-70b")
    options = LlamaCppOptions(n_ctx=8192, n_parallel=1)
    fitted = fit_params(arch, options, [20 * GIB, 20 * GIB])
    assert fitted.status == "fitted"
    split = fitted.options.tensor_split
    assert split is not None
    assert sum(split) == fitted.options.n_gpu_layers
    assert [d.layers for d in fitted.devices] == [int(share) for share in split]
    assert all(d.used_bytes <= d.free_bytes - FIT_TARGET_BYTES for d in fitted.devices)
    # Filled back to front: the last GPU (which holds the output layer) could not take one
    # more layer, nor the first one more once the last was full.
    for device in (1, 0):
        more = list(split)
        more[device] += 1
        trial = options.model_copy(
            update={"n_gpu_layers": fitted.options.n_gpu_layers + 1, "tensor_split": tuple(more)}
        )
        held = estimate_llama_cpp(arch, trial, devices=2).devices[device].total
        assert held > 20 * GIB - FIT_TARGET_BYTES

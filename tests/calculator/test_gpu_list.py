"""'Which GPUs fit' (the list under the levers) counts GPUs the way each runtime uses them
(issue 25, misleads 9).

Expected figures are hand calculations from published configs: Llama 3.3 70B
(meta-llama/Llama-3.3-70B-Instruct config.json: 80 layers, hidden 8,192, 8 KV heads of 128,
vocabulary 128,256, untied head) and the split rule of llama.cpp's ``load_tensors``
(src/llama-model.cpp): with several GPUs and no ``--tensor-split``, the split points are the
devices' free memory, cumulated and normalised (equal cards: 1/n, 2/n, …), and layer slot ``il``
of the ``n_layer + 1`` (the output layer is the last) goes to the first device whose split point
is above ``il / (n_layer + 1)``. Which hardware vLLM serves on, and with which quantization, is
vLLM's "Supported Hardware" table (docs.vllm.ai/en/v0.14.0/features/quantization/) and its
installation guide (CUDA, ROCm and Intel GPUs; on macOS the CPU only).
"""

import re

import pytest
from django.core.cache import cache

from calculator.estimator.runtimes.llama_cpp import layer_split

pytestmark = pytest.mark.django_db
GIB = 1 << 30


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def group_of(response, slug: str):
    return next(g for g in response.context["fits"] for gpu in g.gpus if gpu.slug == slug)


def test_llama_cpp_splits_layer_slots_as_load_tensors_does():
    # 81 slots over 2 cards: split points 0.5 and 1; slots 0-40 (il/81 < 0.5) on the first,
    # 41-80 (the output layer, slot 80, among them) on the second.
    assert layer_split(81, 2) == [41, 40]
    # 33 slots (Llama 3.1 8B) over 4: points 0.25, 0.5, 0.75, 1 → 0-8, 9-16, 17-24, 25-32.
    assert layer_split(33, 4) == [9, 8, 8, 8]
    assert layer_split(33, 1) == [33]


LLAMA_70B = "/?model=Llama+3.3+70B&runtime=llama_cpp&gguf=Q4_K_M&seq=4096&batch=1"


def test_two_rtx_3090s_hold_a_70b_q4_k_m_under_llama_cpp(client):
    # One 3090 is short (the page's own total: about 41.5 GiB on one card). Split over two,
    # each holds half the 80 layers: half of about 39 GiB of GGUF tensors, half of the
    # 80 × 2 × 8 × 128 × 2 B × 4,096 = 1.25 GiB KV cache, its own compute buffer and CUDA
    # context: about 21 GiB, inside the 3090's 23.6 GiB.
    response = client.get(LLAMA_70B + "&gpu=rtx-3090-24gb")
    assert response.context["result"].total_bytes > 40 * GIB
    group = group_of(response, "rtx-3090-24gb")
    assert group.count == 2
    assert 19 * GIB < group.per_gpu_bytes < response.context["gpu"].usable_bytes
    # 12 GB cards: half the weights alone (about 19.5 GiB) is more than one holds.
    assert group_of(response, "rtx-3060-12gb").count > 2
    # One card that holds it all is still one.
    assert group_of(response, "h100-sxm-80gb").count == 1
    note = re.sub(r"\s+", " ", response.content.decode())
    assert "-sm layer" in note
    assert "one GPU with every layer on it" not in note


def test_the_split_keeps_every_byte_of_one_card(client):
    # On one device the split is the page's own total; over two, the two devices together hold
    # the same tensors and KV cache, plus a compute buffer and a CUDA context each.
    response = client.get(LLAMA_70B + "&gpu=h100-sxm-80gb")
    single = response.context["result"]
    assert group_of(response, "h100-sxm-80gb").per_gpu_bytes == single.total_bytes


VLLM_FP8 = (
    "/?model=Qwen2.5+72B&runtime=vllm&quant=fp8&vkv=fp8&seq=8192&gpus=2&tp=2&gpu=h100-sxm-80gb"
)


def test_vllm_fp8_lists_no_card_vllm_cannot_run_it_on(client):
    response = client.get(VLLM_FP8)
    counted = {gpu.slug for g in response.context["fits"] if g.runs for gpu in g.gpus}
    refused = {gpu.slug for g in response.context["fits"] if not g.runs for gpu in g.gpus}
    # Apple GPUs: no vLLM GPU backend. MI250/MI250X (CDNA2): no FP8 in hardware, and vLLM's
    # FP8 W8A8 on AMD needs it. Intel: no FP8 (W8A8) kernel in the table.
    for slug in ("apple-m3-max-128gb", "apple-m2-ultra-192gb", "mi250-128gb", "mi250x-128gb"):
        assert slug in refused
        assert slug not in counted
    # MI300X (FP8 in hardware) and an A100 (FP8 weight-only through Marlin on Ampere) run it.
    assert "mi300x-192gb" in counted
    assert "a100-sxm-80gb" in counted
    page = re.sub(r"\s+", " ", response.content.decode())
    assert "does not run" in page


def test_vllm_in_bf16_runs_on_amd_but_never_on_apple(client):
    response = client.get(VLLM_FP8.replace("quant=fp8", "quant=none"))
    counted = {gpu.slug for g in response.context["fits"] if g.runs for gpu in g.gpus}
    refused = {gpu.slug for g in response.context["fits"] if not g.runs for gpu in g.gpus}
    assert "mi250-128gb" in counted
    assert "apple-m3-ultra-512gb" in refused


def test_over_two_gpus_every_tensor_is_on_exactly_one():
    # Conservation: the two devices hold the single GPU's model and KV buffers between them,
    # and each its own compute buffer plus three more copies of its inputs (four in all,
    # GGML_SCHED_MAX_COPIES): the hidden state, 4,096 × 512 f32, and the f16 KQ mask,
    # 2 × 4,096 cells × 512 tokens (Llama 3.1 8B: hidden 4,096; -c 4,096, -ub 512). The GPU
    # with the output layer reserves what one GPU does (the logits); the other its layers'
    # largest phase, the feed-forward's 4 bytes × 512 × (2 × 14,336 + 2 × 4,096) = 72 MiB.
    from calculator.estimator import resolve_architecture
    from calculator.estimator.runtimes.llama_cpp import (
        LlamaCppOptions,
        estimate_llama_cpp,
        layer_split_gpu_bytes,
        pipeline_input_bytes,
    )
    from calculator.estimator.schemas import ConfigModel
    from tests.conftest import load_validation_config

    arch = resolve_architecture(ConfigModel(config=load_validation_config("llama-3.1-8b")))
    options = LlamaCppOptions(n_ctx=4096, n_parallel=1)
    one = estimate_llama_cpp(arch, options)
    two = layer_split_gpu_bytes(arch, options, 2)
    inputs = pipeline_input_bytes(arch, options)
    assert inputs == 4 * 4096 * 512 + 2 * 4096 * 512
    compute = one.compute_buffer.gpu
    layers_phase = 4 * 512 * (2 * 14_336 + 2 * 4_096)
    assert sum(two) == (
        one.model_buffer.gpu + one.kv_buffer.gpu + compute + layers_phase + 2 * 3 * inputs
    )
    assert layer_split_gpu_bytes(arch, options, 1) == [one.gpu_bytes]


def test_fits_under_vllm_on_an_apple_gpu_lists_nothing_and_says_why(client):
    # The same rule on "What fits in my VRAM": vLLM does not use a Mac's GPU.
    response = client.get("/fits/?runtime=vllm&gpu=apple-m3-max-128gb")
    assert response.context["own"]["models"] == []
    assert 'data-testid="fits-does-not-run"' in response.content.decode()


def test_fits_under_vllm_on_an_mi250_offers_only_what_rocm_runs(client):
    # vLLM's table for AMD GPUs: FP8 (needing FP8 in hardware, which CDNA2 lacks), no AWQ;
    # the published BF16 weights run.
    response = client.get("/fits/?runtime=vllm&gpu=mi250-128gb")
    models = response.context["own"]["models"]
    assert models
    assert {fit.precision for fit in models} == {"none"}
    assert response.context["own"]["left_out"] == ["fp8", "awq"]
    assert 'data-testid="fits-left-out"' in response.content.decode()
    # An MI300X (CDNA3) has FP8 in hardware: only AWQ is left out.
    mi300 = client.get("/fits/?runtime=vllm&gpu=mi300x-192gb").context["own"]
    assert mi300["left_out"] == ["awq"]

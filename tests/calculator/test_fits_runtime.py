"""'What fits' per runtime: llama.cpp's GGUF columns and vLLM's start-up condition, checked
against hand calculations from published configs and ggml's block sizes."""

import pytest

from calculator.catalogue.models import ModelPreset
from calculator.estimator import ConfigModel, estimate, resolve_architecture
from calculator.estimator.runtimes import VllmOptions, estimate_vllm
from calculator.result import reverse

pytestmark = pytest.mark.django_db
GIB = 1 << 30

# ggml block sizes (ggml/src/ggml-common.h: block_q4_K holds 256 weights in 144 bytes,
# block_q6_K 256 weights in 210 bytes; F32 is 4 bytes a value).
Q4_K_BYTES_PER_256 = 144
Q6_K_BYTES_PER_256 = 210


def q4_k(elements: int) -> int:
    return elements // 256 * Q4_K_BYTES_PER_256


def q6_k(elements: int) -> int:
    return elements // 256 * Q6_K_BYTES_PER_256


def qwen25_32b_q4_k_m_gpu_weights() -> int:
    """Qwen2.5 32B as a Q4_K_M GGUF, by hand.

    Shapes from https://huggingface.co/Qwen/Qwen2.5-32B/blob/main/config.json: hidden 5120,
    64 layers, 40 query heads and 8 KV heads of 128 (K and V are 5120 × 1024), MLP 27648,
    vocabulary 152064, untied output. Types as llama.cpp's quantizer picks them for Q4_K_M
    (src/llama-quant.cpp, llama_tensor_get_type): Q4_K everywhere except attn_v and ffn_down
    in the layers where use_more_bits(i, n) holds (i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2:
    8 + 8 + 16 = 32 of 64 layers), which get Q6_K, and the output matrix, Q6_K; norms and the
    Q/K/V biases stay F32. The token-embedding table stays on the host (not counted here).
    """
    hidden, layers, kv_width, mlp, vocab = 5120, 64, 8 * 128, 27648, 152064
    more_bits_layers = 32
    per_layer = (
        q4_k(hidden * hidden) * 2  # attn_q, attn_output
        + q4_k(hidden * kv_width) * 2  # attn_k, attn_v (Q4_K)
        + q4_k(hidden * mlp) * 3  # ffn_gate, ffn_up, ffn_down (Q4_K)
        + 4 * (hidden + 2 * kv_width + 2 * hidden)  # q/k/v biases, two norms (F32)
    )
    assert per_layer == 274_337_792
    more_bits = (q6_k(hidden * kv_width) - q4_k(hidden * kv_width)) + (
        q6_k(hidden * mlp) - q4_k(hidden * mlp)
    )
    assert more_bits == 37_847_040
    output = q6_k(vocab * hidden) + 4 * hidden  # output.weight (Q6_K), output_norm (F32)
    return layers * per_layer + more_bits_layers * more_bits + output


def test_qwen25_32b_q4_k_m_fits_24_gb_but_not_16():
    preset = ModelPreset.objects.get(display_name="Qwen2.5 32B")
    weights = qwen25_32b_q4_k_m_gpu_weights()
    assert weights == 19_407_413_248
    # KV cache at 4096 tokens, f16 (llama-server's default): 64 layers × 4096 cells × (K 1024 +
    # V 1024) × 2 bytes; the CUDA context: the estimator's documented 1 GiB.
    kv = 64 * 4096 * 2048 * 2
    without_compute = weights + kv + GIB
    assert without_compute == 21_554_896_896  # 20.07 GiB
    # 16 GB: 15.76 GiB usable; weights, cache and context alone are over it.
    assert without_compute > reverse.tier_usable_bytes(16)
    # 24 GB: 23.64 GiB usable leave 3.57 GiB for the compute buffer, which llama.cpp prints as
    # a few hundred MiB for a Qwen2.5 32B (llama.cpp#11200: 233 + 237.5 MiB at n_ctx 32768).
    assert reverse.tier_usable_bytes(24) - without_compute > 3.5 * GIB

    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1, runtime="llama_cpp")
    result = estimate(workload.request(ConfigModel(config=preset.config), "Q4_K_M"))
    assert result.llama_cpp is not None
    assert result.llama_cpp.model_buffer.gpu == weights
    assert result.breakdown.kv_cache == kv
    # The page's verdicts: Q4_K_M is the most precise column that fits 24 GB; on 16 GB only a
    # smaller file (Q3_K_M or Q2_K) does.
    on_24 = reverse.models_that_fit(workload, [preset], reverse.tier_usable_bytes(24), 1)
    on_16 = reverse.models_that_fit(workload, [preset], reverse.tier_usable_bytes(16), 1)
    assert [fit.precision for fit in on_24] == ["Q4_K_M"]
    assert [fit.precision for fit in on_16] in ([], ["Q3_K_M"], ["Q2_K"])
    # Its longest context at full offload is longer than the 4096 tokens that fit.
    assert on_24[0].max_context >= 4096


def test_llama_cpp_examples_really_fit_their_tier():
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1, runtime="llama_cpp")
    presets = list(ModelPreset.objects.filter(active=True))
    table = reverse.tier_table(workload, presets)
    assert [cell.precision for cell in table[0].cells] == list(reverse.GGUF_COLUMNS)
    for row in table:
        for cell in row.cells:
            assert cell.naive_billion >= cell.honest_billion, (row.gb, cell.precision)
            for example in cell.examples:
                request = workload.request({"config": example.preset.config}, cell.precision)
                assert estimate(request).total_bytes <= row.usable_bytes


def test_llama_cpp_columns_count_the_rs_buffer_of_a_hybrid():
    # Granite 4.0 H Tiny (presets/models/granite.json, its config: 36 Mamba-2 layers of 48 heads
    # x 64, 1 group, state 128, d_conv 4). llama.cpp keeps per Mamba layer and slot, in F32,
    # n_embd_r = (4 - 1) x (3072 + 2 x 128) and n_embd_s = 128 x 3072 (src/llama-hparams.cpp).
    preset = ModelPreset.objects.get(display_name="Granite 4.0 H Tiny")
    rs_by_hand = 4 * 36 * 4 * (3 * (3072 + 2 * 128) + 128 * 3072)
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=4, runtime="llama_cpp")
    result = estimate(workload.request(ConfigModel(config=preset.config), "Q4_K_M"))
    assert result.llama_cpp is not None
    assert result.llama_cpp.recurrent_buffer.gpu == rs_by_hand
    assert result.total_bytes == result.llama_cpp.gpu_bytes + result.breakdown.cuda_context
    # A card with room for all but the RS buffer does not hold this file at these settings.
    assert reverse.fits(workload, result, result.total_bytes)
    assert not reverse.fits(workload, result, result.total_bytes - rs_by_hand)
    exact = reverse.models_that_fit(workload, [preset], result.total_bytes, 1)
    assert [(fit.precision, fit.total_bytes) for fit in exact] == [("Q4_K_M", result.total_bytes)]
    # The longest context is searched with the same total: exactly the 4,096 tokens that fit
    # (without the RS buffer the search would find room for more).
    assert exact[0].max_context == 4096
    short = reverse.models_that_fit(workload, [preset], result.total_bytes - rs_by_hand, 1)
    assert all(fit.precision != "Q4_K_M" for fit in short)


def test_vllm_llama_31_8b_needs_a_24_gb_card_in_bf16():
    # https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json: hidden 4096,
    # 32 layers, 8 KV heads of 128, MLP 14336, vocabulary 128256, untied output.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    params = 32 * per_layer + 2 * 128256 * 4096 + 4096
    assert params == 8_030_261_248
    weights = 2 * params  # BF16
    # vLLM takes gpu_memory_utilization (0.9) of the card; the BF16 weights alone are over that
    # on a 16 GB card (0.9 × 15.76 GiB = 14.18 GiB < 14.96 GiB), so vLLM cannot start.
    assert weights > 0.9 * reverse.tier_usable_bytes(16)
    # On 24 GB: 21.28 GiB less the weights leave 6.3 GiB for the profiling peak (2048 tokens
    # on cards under 70 GiB: well under 2 GiB) and the pool; one 4096-token request needs
    # 4096 × 32 layers × (K + V) 2 × 8 heads × 128 × 2 bytes = 0.5 GiB.
    request_kv = 4096 * 32 * 2 * 8 * 128 * 2
    assert 0.9 * reverse.tier_usable_bytes(24) - weights - 2 * GIB > request_kv

    preset = ModelPreset.objects.get(display_name="Llama 3.1 8B")
    model = ConfigModel(config=preset.config)
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1, runtime="vllm")
    usables = [reverse.tier_usable_bytes(gb) for gb in reverse.TIERS_GB]
    assert reverse._smallest_fitting_tier(workload, model, "none", usables) == 1  # 24 GB


@pytest.mark.parametrize("quantization", reverse.VLLM_COLUMNS)
def test_vllm_column_agrees_with_estimate_vllm(quantization):
    preset = ModelPreset.objects.get(display_name="Qwen2.5 32B")
    model = ConfigModel(config=preset.config)
    arch = resolve_architecture(model)
    workload = reverse.Workload(mode="inference", seq_len=8192, batch_size=1, runtime="vllm")
    for gb in reverse.TIERS_GB:
        usable = reverse.tier_usable_bytes(gb)
        started = estimate_vllm(
            arch,
            VllmOptions(gpu_memory_bytes=usable, max_model_len=8192, quantization=quantization),
        )
        result = estimate(workload.request(model, quantization, usable_bytes=usable))
        assert reverse.fits(workload, result, usable) == (
            started.fits and result.total_bytes <= usable
        ), (gb, quantization)
        fitting = reverse.models_that_fit(workload, [preset], usable, 1)
        if started.fits:
            assert fitting, (gb, quantization)
            assert fitting[0].max_context >= 8192


@pytest.mark.parametrize(
    ("runtime", "precision", "model"),
    [("llama_cpp", "Q4_K_M", "Qwen2.5 32B"), ("vllm", "none", "Llama 3.1 8B")],
)
def test_links_open_the_calculator_with_the_same_runtime_and_total(
    client, runtime, precision, model
):
    preset = ModelPreset.objects.get(display_name=model)
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1, runtime=runtime)
    usable = reverse.tier_usable_bytes(24)
    fit = next(f for f in reverse.models_that_fit(workload, [preset], usable, 1))
    assert fit.precision == precision
    query = reverse.calculator_query(workload, preset, fit.precision, vram_gb=24)
    page = client.get("/?" + query + "&format=json").json()
    assert page["runtime"] == runtime
    assert page["total_bytes"] == fit.total_bytes
    assert page["verdict"]["fits"] is True


def test_fits_page_shows_the_runtime_columns(client):
    body = client.get("/fits/?runtime=llama_cpp&seq=2048").content.decode()
    for name in reverse.GGUF_COLUMNS:
        assert f'<th scope="col">{name}</th>' in body
    assert "all layers on the GPU" in body
    assert "runtime=llama_cpp" in body
    assert "gguf=Q4_K_M" in body
    body = client.get("/fits/?runtime=vllm&gb=24").content.decode()
    assert '<th scope="col">AWQ</th>' in body
    assert '<th scope="col">FP8</th>' in body
    assert "one request of that length" in body
    assert "runtime=vllm" in body
    assert "quant=awq" in body


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("mode=lora&runtime=vllm", "choose Hugging Face transformers for training"),
        ("mode=full_finetune&runtime=llama_cpp", "choose Hugging Face transformers for training"),
        ("runtime=tensorrt", "Select a valid choice."),
    ],
)
def test_fits_page_bad_runtime_gets_a_message(client, query, message):
    response = client.get("/fits/?" + query)
    assert response.status_code == 200
    body = response.content.decode()
    assert message in body
    assert "tier-table" not in body


def test_fits_page_lists_moe_models_with_experts_in_ram(client):
    # An RTX 3090 (24 GiB) and 64 GB of RAM: gpt-oss-120b's MXFP4 file (116.8 B parameters,
    # ~61 GiB) does not fit the card whole, and --fit runs it with experts in RAM; Qwen3-30B-
    # A3B fits whole at 4-6 bits, and with experts in RAM at a more precise type.
    body = client.get("/fits/?runtime=llama_cpp&gpu=rtx-3090-24gb&ram=64&seq=4096").content.decode()
    table = body[body.index('data-testid="fits-experts-in-ram"') :]
    table = table[: table.index("</table>")]
    rows = {row.split("</a>")[0].rsplit(">", 1)[-1]: row for row in table.split("<tr>")[2:]}
    assert "gpt-oss-120b" in rows
    assert "Qwen3 30B-A3B (MoE)" in rows
    assert "ot=" in rows["gpt-oss-120b"]
    assert "ngl=37" in rows["gpt-oss-120b"]
    whole = body[body.index('id="own-title"') : body.index('id="experts-title"')]
    assert "Qwen3 30B-A3B (MoE)" in whole
    assert "gpt-oss-120b<" not in whole
    # Every listed placement's RAM is within the machine's 64 GB (a RAM kit's "64 GB" is
    # 64 GiB, calculation.host_ram_bytes).
    for cells in rows.values():
        ram_gib = float(cells.split('data-label="System RAM">')[1].split(" GiB")[0])
        assert ram_gib <= 64


def test_fits_page_splits_llama_cpp_over_several_gpus(client):
    # Llama 3.3 70B at Q4_K_M (~40 GiB of weights) fits two 24 GB cards but not one.
    one = client.get("/fits/?runtime=llama_cpp&gb=24&count=1&seq=4096").content.decode()
    two = client.get("/fits/?runtime=llama_cpp&gb=24&count=2&seq=4096").content.decode()
    assert "Llama 3.3 70B" not in one.split('id="own-title"')[1].split("</table>")[0]
    listed = two.split('id="own-title"')[1].split("</table>")[0]
    assert "Llama 3.3 70B" in listed
    assert "gpus=2" in listed
    assert "tp=" not in listed

"""Speed beside memory (issue 15) on the page, the JSON export and the API.

Bounds are physical, from datasheets and published configs: an RTX 4090 reads 1,008 GB/s
(NVIDIA Ada whitepaper, presets/GPUS_SOURCES.md); Llama 3.1 8B holds 8,030,261,248 parameters
(transformers count of meta-llama/Llama-3.1-8B's config.json), 2 bytes each in BF16. One sequence's
generation reads every weight once per token, so it cannot beat 1,008e9 / (2 × 8.03e9) = 62.8
tokens/s; a Q4_K_M file (about 4.9 bits per weight) allows proportionally more.
"""

import json
import re

import pytest
from django.core.cache import cache

pytestmark = pytest.mark.django_db

LLAMA_8B_PARAMS = 8_030_261_248
RTX_4090_BYTES_PER_S = 1008e9


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_generation_speed_stays_under_the_bandwidth_roofline(client):
    response = client.get("/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=4096")
    speed = response.context["speed"]
    ceiling = RTX_4090_BYTES_PER_S / (2 * LLAMA_8B_PARAMS)
    assert 0.3 * ceiling < speed.decode_tokens_per_s < ceiling
    # A longer context adds KV-cache reads to every token: never faster.
    assert speed.decode_tokens_per_s_full_context <= speed.decode_tokens_per_s
    assert "tokens/s for one sequence" in text(response)
    assert speed.prompt_tokens == 4096  # the prompt defaults to the sequence length


def test_a_gguf_file_generates_faster_than_bf16_weights(client):
    bf16 = client.get("/?model=Llama+3.1+8B&gpu=rtx-4090-24gb").context["speed"]
    gguf = client.get("/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&runtime=llama_cpp").context["speed"]
    # Q4_K_M reads about 4.9 of every 16 bits: more than twice the tokens for the same bandwidth.
    assert gguf.decode_tokens_per_s > 2 * bf16.decode_tokens_per_s
    assert gguf.decode_tokens_per_s < RTX_4090_BYTES_PER_S / (LLAMA_8B_PARAMS * 4.5 / 8)


def test_layers_in_system_ram_slow_generation_down(client):
    query = "/?model=Llama+3.1+70B&gpu=rtx-4090-24gb&runtime=llama_cpp&ngl=40"
    response = client.get(query)
    speed = response.context["speed"]
    # System RAM (default 89.6 GB/s) is an order of magnitude slower than the card's 1,008 GB/s.
    assert speed.host_slowdown > 2
    assert "slower than with every layer on the GPU" in text(response)
    faster = client.get(query + "&ram_bw=400").context["speed"]
    assert faster.decode_tokens_per_s > speed.decode_tokens_per_s


def test_training_shows_throughput_time_and_cost(client):
    response = client.get(
        "/?model=Llama+3.1+8B&mode=full_finetune&gpu=h100-sxm-80gb&gpus=8&zero=3&train_b=1&price=2"
    )
    speed = response.context["speed"]
    per_gpu = speed.training_tokens_per_s_per_gpu
    assert per_gpu > 0
    # 1e9 tokens at 8 × per_gpu tokens/s; cost = GPU-hours × 2 (hand calculation).
    assert speed.time_to_train_s == pytest.approx(1e9 / (8 * per_gpu), rel=0.01)
    assert speed.cost == pytest.approx(speed.time_to_train_s / 3600 * 8 * 2, rel=0.01)
    assert "the whole run takes" in text(response)


def test_a_memory_size_alone_has_no_speed(client):
    response = client.get("/?model=Llama+3.1+8B&vram=12")
    assert response.context["speed"] is None
    assert "Choose a catalogue GPU to see how fast it runs" in text(response)


def test_a_saved_result_on_a_catalogue_gpu_does_not_ask_for_one(client):
    """A snapshot keeps the GPU's name and memory: the page must not tell the visitor to
    choose a catalogue GPU, which they did."""
    location = client.post("/r/", {"query": "model=Llama+3.1+8B&gpu=rtx-4090-24gb"})["Location"]
    saved = client.get(location)
    assert "Fits on NVIDIA GeForce RTX 4090" in text(saved)
    assert "Choose a catalogue GPU" not in text(saved)


def test_charts_come_with_the_advice(client):
    response = client.get("/?model=Llama+3.1+8B&gpu=rtx-4090-24gb")  # full page: advice included
    page = response.content.decode()
    assert 'id="chart-memory"' in page
    assert 'id="chart-speed"' in page
    assert "usable memory:" in page


def test_export_and_api_carry_the_speed(client):
    page = json.loads(client.get("/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&format=json").content)
    api = client.get("/api/v1/estimate?model=Llama+3.1+8B&gpu=rtx-4090-24gb").json()
    assert page["speed"]["decode_tokens_per_s"] == api["speed"]["decode_tokens_per_s"]
    assert api["speed"]["runtime"] == "transformers"
    body = {"model": {"preset": "llama-3.1-8b"}, "gpu": "rtx-4090-24gb", "prompt_tokens": 1000}
    posted = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert posted.json()["speed"]["prompt_tokens"] == 1000


def test_fits_lists_a_speed_beside_each_model_on_a_catalogue_gpu(client):
    response = client.get("/fits/?gpu=rtx-4090-24gb&seq=4096")
    fits = response.context["own"]["models"]
    llama = next(fit for fit in fits if fit.preset.slug == "llama-3.1-8b")
    assert llama.precision == "bf16"  # 16 GB of weights fit a 24 GB card at 4,096 tokens
    assert 0 < llama.tokens_per_s < RTX_4090_BYTES_PER_S / (2 * LLAMA_8B_PARAMS)
    assert all(fit.tokens_per_s for fit in fits)
    assert "tokens/s" in text(response)
    by_memory = client.get("/fits/?gb=24&seq=4096")
    assert not by_memory.context["own"]["speed"]  # a memory size alone says nothing of speed


def test_optimizer_offload_slows_training_by_the_cpu_step(client):
    # Walkthrough turn 3, persona 3: 2,570 tokens/s per GPU with or without offload. ZeRO-Offload
    # (Ren et al. 2021 §4.1) runs the AdamW step on the CPU: 30 bytes per parameter for the
    # machine's 8,030,261,248 (8 GPUs × 1/8 each) through one server socket's 204.8 GB/s
    # (8 × DDR4-3200, JEDEC JESD79-4) at 60%: 240.9e9 / 122.88e9 = 1.96 s more per step, plus
    # the 16-bit partition back over PCIe 4.0 x16: 2 × 8.03e9 / 8 / 31.5e9 = 0.064 s.
    query = (
        "/?model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&gpu=a100-sxm-40gb&gpus=8"
        "&zero=3&batch=4&seq=4096&ckpt=on&train_b=1&price=1.5&ram=512"
    )
    offloaded = client.get(query + "&opt_offload=on")
    # Without offload it fits only the 80 GB card: the same 312 dense BF16 TFLOPS per GPU.
    plain = client.get(query.replace("gpu=a100-sxm-40gb", "gpu=a100-sxm-80gb")).context["speed"]
    speed = offloaded.context["speed"]
    added = 30 * LLAMA_8B_PARAMS / (204.8e9 * 0.6) + 2 * LLAMA_8B_PARAMS / 8 / 31.5e9
    assert speed.step_time_s - plain.step_time_s == pytest.approx(added, rel=0.01)
    assert speed.time_to_train_s > plain.time_to_train_s
    assert speed.cost > plain.cost
    assert "the CPU updates the 8,030,261,248 parameters" in text(offloaded)

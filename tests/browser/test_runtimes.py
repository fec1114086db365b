"""Choosing a runtime in real Chromium (issue 13): llama.cpp with layers offloaded, vLLM's
concurrency, and the one-click defaults of Ollama.

Figures: Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json) has 32 layers, so llama.cpp counts
33 with the output layer; its KV cache per token is 32 layers × (K + V) × 8 heads × 128 × 2 bytes
= 128 KiB in f16, so a 4,096-token context holds 512 MiB (hand calculation).
"""

import re

import pytest

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def recompute(page, action) -> None:
    with page.expect_response(
        lambda r: r.request.headers.get("hx-request") == "true" and "/suggest" not in r.url
    ):
        action()
    page.wait_for_timeout(80)


def result_text(page) -> str:
    return " ".join(page.inner_text("#result").split())


def test_choosing_llama_cpp_shows_its_options_buffers_and_command(page, live_server):
    page.goto(live_server.url + "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=4096")
    assert not page.is_visible("#id_gguf")  # transformers: the llama.cpp options stay folded
    recompute(page, lambda: page.select_option("#id_runtime", "llama_cpp"))
    assert page.is_visible("#id_gguf")
    assert not page.is_visible("#id_precision")  # a GGUF file type replaces the precision
    page.wait_for_function(
        "() => document.querySelector('#result').innerText.includes('What llama.cpp will print')"
    )
    text = result_text(page)
    # 4,096 tokens × 128 KiB = 512 MiB = 0.50 GiB of KV cache on the GPU.
    assert re.search(r"KV buffer size 0\.50", text), text[:800]
    assert "llama-server" in text
    assert "runtime=llama_cpp" in page.url
    screenshot(page, "runtime-llama-cpp")
    assert page.server_errors == []


def test_offloading_layers_moves_memory_to_system_ram(page, live_server):
    page.goto(live_server.url + "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=4096&runtime=llama_cpp")
    recompute(page, lambda: page.fill("#id_ngl", "16"))
    page.wait_for_function(
        "() => document.querySelector('#result').innerText.includes('System RAM')"
    )
    text = result_text(page)
    assert "16 of 33 layers on the GPU" in text
    assert "ngl=16" in page.url
    # The levers, loaded after the result, offer every layer back (the model fits a 4090).
    page.wait_for_selector("[data-testid=llama-levers]")
    assert "33 of 33" in page.inner_text("[data-testid=llama-levers]")
    assert page.server_errors == []


def test_ollama_defaults_are_one_click(page, live_server):
    page.goto(live_server.url + "/?model=Llama+3.1+8B&runtime=llama_cpp&gpu=rtx-4090-24gb")
    page.click("[data-testid=runtime-preset] >> text=Ollama")
    page.wait_for_load_state()
    assert page.input_value("#id_batch") == "1"
    assert page.input_value("#id_fa") == "on"  # flash attention "auto" on a CUDA card
    assert "What llama.cpp will print" in result_text(page)


def test_vllm_shows_how_many_requests_the_card_serves(page, live_server):
    page.goto(live_server.url + "/?model=Llama+3.1+8B&gpu=h100-sxm-80gb&seq=8192")
    recompute(page, lambda: page.select_option("#id_runtime", "vllm"))
    page.wait_for_selector("[data-testid=vllm-concurrency]")
    line = page.inner_text("[data-testid=vllm-concurrency]")
    found = re.search(r"serves ([\d.,]+) concurrent", line)
    assert found, line
    served = float(found.group(1).replace(",", ""))
    assert served > 1  # an 80 GB card holds many 8,192-token requests of an 8B model
    page.wait_for_selector("[data-testid=vllm-concurrency-table]")
    rows = page.locator("[data-testid=vllm-concurrency-table] tbody tr")
    assert rows.count() >= 3
    # Longer contexts serve fewer requests at once.
    values = [
        float(rows.nth(i).locator("td").nth(1).inner_text().replace(",", ""))
        for i in range(rows.count())
    ]
    assert values == sorted(values, reverse=True)
    assert "vllm serve" in result_text(page)
    screenshot(page, "runtime-vllm")
    assert page.server_errors == []


def test_runtime_defaults_keep_the_model_and_gpu_chosen_on_the_page(page, live_server):
    # Issue 25, misleads 11: the links were built when the page loaded, so after choosing a
    # model and a GPU on the page, "Ollama" reset them to Llama 3.1 8B on an RTX 4090.
    page.goto(live_server.url + "/")
    recompute(page, lambda: page.select_option("#id_runtime", "llama_cpp"))
    recompute(page, lambda: page.fill("#id_model", "Qwen3 30B-A3B"))
    recompute(page, lambda: page.select_option("#id_gpu", "rtx-3060-12gb"))
    recompute(page, lambda: page.fill("#id_seq", "16384"))
    assert "rtx-3060-12gb" in page.url
    with page.expect_navigation():
        page.click("[data-testid=runtime-preset] >> text=Ollama")
    assert page.input_value("#id_model") == "Qwen3 30B-A3B"
    assert page.input_value("#id_gpu") == "rtx-3060-12gb"
    # Ollama's own settings replace llama.cpp's (ollama/ollama@fb30760 envconfig/config.go,
    # api/types.go): one slot, -b 512, a 4,096-token context on a card under 24 GiB.
    assert page.input_value("#id_batch") == "1"
    assert page.input_value("#id_nbatch") == "512"
    assert page.input_value("#id_seq") == "4096"
    assert "Qwen3 30B" in result_text(page)
    assert page.server_errors == []


def test_a_second_gpu_splits_the_layers_and_lists_each_device(page, live_server):
    """Issue 28: two GPUs under llama.cpp. Llama 3.1 8B's 33 slots split 17 / 16 (llama.cpp's
    split points at halves); at 4,096 tokens a layer's KV is 16 MiB, so GPU 0's 17 layers hold
    272 MiB (0.27 GiB) and GPU 1's 15 layers 240 MiB (0.23 GiB)."""
    page.goto(live_server.url + "/?model=Llama+3.1+8B&gpu=rtx-3090-24gb&seq=4096&runtime=llama_cpp")
    recompute(page, lambda: page.fill("#id_gpus", "2"))
    page.wait_for_function(
        "() => document.querySelector('#result').innerText.includes('CUDA1 model buffer size')"
    )
    text = result_text(page)
    assert re.search(r"CUDA0 KV buffer size 0\.27", text), text[:800]
    assert re.search(r"CUDA1 KV buffer size 0\.23", text)
    assert "per GPU" in text
    assert "gpus=2" in page.url
    screenshot(page, "runtime-llama-cpp-two-gpus")
    assert page.server_errors == []


def test_no_gpu_shows_what_the_cpu_and_ram_hold(page, live_server):
    """Issue 28, CPU only: choosing "No GPU" keeps every layer on the CPU; the headline is the
    system RAM llama.cpp needs (Llama 3.1 8B Q4_K_M at 4,096 tokens), the verdict the RAM's."""
    page.goto(
        live_server.url
        + "/?model=Llama+3.1+8B&gpu=rtx-3090-24gb&seq=4096&runtime=llama_cpp&gguf=Q4_K_M&ram=16"
    )
    recompute(page, lambda: page.select_option("#id_gpu", "cpu"))
    page.wait_for_function("() => document.querySelector('#result').innerText.includes('no GPU')")
    text = result_text(page)
    assert "0 of 33 layers on the GPU" in text
    assert "of system RAM needed: fits in your 16.00 GiB" in text
    assert "Fits on" not in text
    assert page.locator("[data-testid=cpu-speed]").is_visible()
    assert "gpu=cpu" in page.url
    screenshot(page, "runtime-llama-cpp-no-gpu")
    assert page.server_errors == []


def test_a_big_moe_on_a_24_gb_card_runs_with_its_experts_in_ram(page, live_server):
    """Issue 28: gpt-oss-120b on an RTX 3090 with 64 GB of RAM. Hand calculation from its
    config.json (openai/gpt-oss-120b: 36 layers, 128 experts of gate, up and down matrices of
    2,880 × 2,880) and MXFP4's 17 bytes per 32 weights (ggml-common.h block_mxfp4): a layer's
    experts are 128 × 3 × 2,880² × 17/32 bytes = 1.576 GiB, so the card's 24 GiB hold at most
    15 layers of them and at least 36 - 15 = 21 layers keep their experts in system RAM, at
    1.576 GiB each (the RAM figure below is those layers' experts and little else)."""
    page.goto(
        live_server.url
        + "/?model=gpt-oss-120b&gpu=rtx-3090-24gb&seq=8192&runtime=llama_cpp&gguf=MXFP4&ram=64"
    )
    page.wait_for_selector("[data-testid=experts-in-ram] a")
    lever = page.inner_text("[data-testid=experts-in-ram]")
    found = re.search(r"first (\d+) of 36 layers, ([\d.]+) GiB of system RAM", lever)
    assert found, lever
    layers, ram = int(found.group(1)), float(found.group(2))
    assert 21 <= layers <= 30, lever
    assert abs(ram - layers * 1.576) / (layers * 1.576) < 0.05, lever
    # --fit's own choice, as a command to copy, with its speed.
    fit = page.inner_text("[data-testid=llama-fit]")
    assert "--fit" in fit, fit
    assert "tokens/s" in fit, fit
    assert re.search(r"experts of \d+ of them in system RAM", fit), fit
    # Following the lever gives that setup's estimate: it fits the card, the RAM holds the rest.
    with page.expect_navigation():
        page.click("[data-testid=experts-in-ram] a")
    assert f"ncmoe={layers}" in page.url
    page.wait_for_selector("[data-testid=llama-fit]")
    text = result_text(page)
    assert "System RAM" in text, text[:800]
    assert "tokens/s" in text
    screenshot(page, "runtime-llama-cpp-experts-in-ram")
    assert page.server_errors == []

"""One verdict for the GPU and the machine's RAM together, and a speed only for a setup that runs
(issue 25, "Misleads" 1-2), on the page, the exports and the API.

The cases are the walkthrough's (/work/shared/research/walkthrough-turn3.md, personas 1 and 4).
Expected answers are hand reasoning from published sizes, written out in each test:
- gpt-oss-120b as a Q4_K_M GGUF is 87.84 GB (the "print_info: file size" the page shows); an RTX
  3060 exposes 11.82 GiB = 12.69 GB (nvidia-smi total, presets/gpus.json), so 12.69 GB of VRAM and
  64 GB of RAM hold 76.69 GB, less than the file: no -ngl split can run on that machine.
- Qwen3 30B-A3B at Q4_K_M is about 18.6 GB: it overflows the 3060's 12.69 GB with every layer on
  it, and fits 64 GB of RAM many times over.
"""

import json
import re

import pytest
from django.core.cache import cache

from calculator.result.presenters import Verdict, run_verdict

pytestmark = pytest.mark.django_db

GPT_OSS_3060 = "/?model=gpt-oss-120b&runtime=llama_cpp&gpu=rtx-3060-12gb&ram=48"
QWEN30_3060 = "/?model=qwen3+30b+a3b&runtime=llama_cpp&gpu=rtx-3060-12gb&ram=64"
QWEN72_VLLM = "/?model=Qwen2.5+72B&runtime=vllm&gpu=h100-sxm-80gb&gpus=2&tp=2&seq=8192"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def _gpu(fits: bool) -> Verdict:
    return Verdict(fits, 11.82, 12.0, 5.0 if fits else 0.0, 0.0 if fits else 1.0, 1, 0)


@pytest.mark.parametrize(
    ("gpu_fits", "ram_fits", "runs", "state"),
    [
        (True, None, True, "fits"),  # no RAM given: the card decides
        (True, True, True, "fits"),
        (True, False, False, "ram_short"),
        (False, True, False, "gpu_short"),
        (False, None, False, "gpu_short"),
        (False, False, False, "gpu_and_ram_short"),
    ],
)
def test_the_setup_runs_only_when_gpu_and_ram_both_hold_their_part(gpu_fits, ram_fits, runs, state):
    host = None if ram_fits is None else {"fits": ram_fits}
    answer = run_verdict(_gpu(gpu_fits), host)
    assert answer.runs is runs
    assert answer.fit_state == state


def test_a_gpu_that_fits_does_not_say_fits_when_the_ram_is_short(client):
    # -ngl 5: the GPU part fits the 3060, the other 32 layers need more than 48 GB of RAM.
    response = client.get(GPT_OSS_3060 + "&ngl=5")
    page = text(response)
    assert response.context["host_verdict"]["fits"] is False
    assert "✔ Fits on" not in page
    # 56.03 GB (10⁹) = 52.18 GiB, as the "System RAM" line says; the 48 GB of RAM the visitor
    # gave are 48 GiB, as memory is sold (issue 25: GiB and GB no longer mixed).
    assert "✘ Does not fit: 52.18 GiB of system RAM needed, more than your 48.00 GiB" in page
    export = json.loads(client.get(GPT_OSS_3060 + "&ngl=5&format=json").content)
    # The card's own answer stays for compatibility; the setup's answer is the new field.
    assert export["verdict"]["fits"] is True
    assert export["verdict"]["runs"] is False
    assert export["verdict"]["fit_state"] == "ram_short"
    markdown = client.get(GPT_OSS_3060 + "&ngl=5&format=md").content.decode()
    assert "does not fit: system RAM is short" in markdown
    api = client.get("/api/v1/estimate" + (GPT_OSS_3060 + "&ngl=5")[1:]).json()
    assert api["verdict"]["runs"] is False
    assert api["verdict"]["fit_state"] == "ram_short"
    assert api["host_verdict"]["fits"] is False


def test_the_ngl_lever_offers_no_split_the_ram_cannot_hold(client):
    # 12.69 GB of VRAM + 48 GiB (51.54 GB) of RAM < the 63.37 GB MXFP4 file: no -ngl runs, so
    # none is offered.
    response = client.get(GPT_OSS_3060)
    levers = response.context["llama_levers"]
    assert levers["gpu_layers"] == 0
    assert levers["ram_short"]["need_bytes"] > 48 * 2**30
    page = text(response)
    assert "ngl=7" not in response.content.decode()
    assert "the rest needs 48.95 GiB of system RAM, more than your 48.00 GiB" in page
    # With 128 GB, 12.69 + 128 > 63.37: the same most-layers split is offered again.
    roomy = client.get(GPT_OSS_3060.replace("ram=48", "ram=128")).context["llama_levers"]
    assert roomy["gpu_layers"] == 7  # the most layers the 12 GB card holds
    assert roomy["ram_short"] is None


def test_the_ngl_lever_that_fits_ram_is_kept(client):
    # Qwen3 30B-A3B: the layers left on the host take well under 64 GB.
    levers = client.get(QWEN30_3060).context["llama_levers"]
    assert 0 < levers["gpu_layers"] < levers["all_layers"]
    assert levers["ram_short"] is None


def test_no_speed_for_a_setup_that_does_not_fit(client):
    # Every layer on the 3060: 18.78 GiB against 11.82 GiB. The walkthrough saw 115 tokens/s here.
    response = client.get(QWEN30_3060)
    assert response.context["speed"] is None
    page = text(response)
    assert "✘ Does not fit on NVIDIA GeForce RTX 3060 12GB" in page
    # No speed for the setup as chosen (the --fit block times its own placement, which runs).
    assert "tokens/s for one sequence" not in page
    assert "No speed: this setup does not run as chosen" in page
    export = json.loads(client.get(QWEN30_3060 + "&format=json").content)
    assert export["speed"] is None
    assert export["speed_unavailable"] == "gpu_short"
    # With the -ngl split that fits, the speed is back.
    fitting = client.get(QWEN30_3060 + "&ngl=29")
    assert fitting.context["speed"].decode_tokens_per_s > 0
    assert "tokens/s for one sequence" in text(fitting)


def test_no_speed_when_vllm_will_not_start(client):
    # BF16 Qwen2.5 72B over 2 × H100 at 8k leaves no KV pool: vLLM refuses to start.
    response = client.get(QWEN72_VLLM)
    page = text(response)
    assert "vLLM will not start" in page
    assert response.context["speed"] is None
    assert "tokens/s" not in page
    api = client.get("/api/v1/estimate" + QWEN72_VLLM[1:]).json()
    assert api["speed"] is None
    assert api["speed_unavailable"] == "gpu_short"
    assert api["verdict"]["runs"] is False
    started = client.get(QWEN72_VLLM + "&quant=fp8&vkv=fp8")
    assert started.context["speed"].decode_tokens_per_s > 0


def test_no_training_time_or_cost_for_a_run_that_does_not_fit(client):
    # Llama 3.1 8B without checkpointing on 8 × A100 40GB: over 100 GiB per GPU.
    response = client.get(
        "/?model=Llama+3.1+8B&mode=full_finetune&gpu=a100-sxm-40gb&gpus=8&zero=3&batch=4"
        "&seq=4096&train_b=1&price=1.5"
    )
    assert response.context["speed"] is None
    assert "the whole run takes" not in text(response)
    assert "No speed: this setup does not run as chosen" in text(response)


def test_a_memory_size_alone_says_why_it_has_no_speed_in_the_api(client):
    api = client.get("/api/v1/estimate?model=Llama+3.1+8B&vram=24").json()
    assert api["speed"] is None
    assert api["speed_unavailable"] == "no_catalogue_gpu"


def test_the_openapi_description_documents_the_combined_answer(client):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    verdict = schemas["Verdict"]["properties"]
    assert {"fits", "runs", "fit_state"} <= set(verdict)
    assert verdict["fit_state"]["enum"] == ["fits", "gpu_short", "ram_short", "gpu_and_ram_short"]
    assert "speed_unavailable" in schemas["ApiEstimateResponse"]["properties"]


def test_the_ram_line_and_its_verdict_speak_one_unit(client):
    """Issue 25 (walkthrough persona 1, defect 10): "System RAM: 71.67 GiB" sat above "76.95 GB
    of system RAM needed". Both lines now give the same figure in GiB; the RAM the visitor
    typed is read as sold (64 GB of memory = 64 GiB), as a card's marketed "12GB" is."""
    page = text(client.get(GPT_OSS_3060 + "&ngl=5"))
    ram_line = re.search(r"System RAM: ([\d.]+) GiB", page)
    verdict = re.search(r"([\d.]+) GiB of system RAM needed: more than your ([\d.]+) GiB", page)
    assert ram_line
    assert verdict
    assert ram_line.group(1) == verdict.group(1) == "52.18"
    assert verdict.group(2) == "48.00"
    assert not re.search(r"\d GB of system RAM", page)
    # 56 typed = 56 GiB = 60.13 × 10⁹ bytes, over the 56.03 × 10⁹ needed; read as 56 × 10⁹
    # bytes it would fall short.
    roomy = client.get(GPT_OSS_3060.replace("ram=48", "ram=56") + "&ngl=5")
    assert roomy.context["host_verdict"]["have_bytes"] == 56 * 2**30
    assert roomy.context["host_verdict"]["fits"] is True

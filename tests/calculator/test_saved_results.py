"""A saved link reproduces the live result: its page, its JSON and its Markdown.

The reference is the live page itself: the claim is that the two renderings are equal, so for
each setting the saved page's result section is compared with the live page's, and the saved
exports with the live exports, after removing only what must differ (the "saved at" line, the
links and the form, which a snapshot replaces by the list of its inputs).
"""

import html
import re

import pytest

from calculator.catalogue.models import GpuSpec, ModelPreset, SavedResult

pytestmark = pytest.mark.django_db

DEEPSPEED_8X_A100 = (
    "model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&zero=3&gpus=8"
    "&gpu=a100-sxm-40gb&batch=4&seq=4096&ckpt=on"
)

# Modes × runtimes × a catalogue GPU or a memory size, offload on and off, several training
# stacks, several GPUs: 36 settings, each saved and compared.
MATRIX = {
    # inference, transformers
    "hf-4090": "model=Llama+3.1+8B&gpu=rtx-4090-24gb",
    "hf-own-12gb": "model=Llama+3.1+8B&vram=12",
    "hf-tp2-h100": "model=Qwen2.5+72B&gpus=2&tp=2&gpu=h100-sxm-80gb&seq=8192",
    "hf-int4-kv8": "model=Mistral+7B&precision=int4&kv=int8&gpu=rtx-3060-12gb&batch=4",
    "hf-prequantized": "model=gpt-oss-20b&gpu=h100-sxm-80gb",
    "hf-beyond-window": "model=Mistral+7B&seq=65536&gpu=a100-sxm-80gb",
    "hf-images": "model=Qwen2-VL+2B&images=2&prompt=512&gpu=rtx-4090-24gb",
    "hf-custom-model": "source=custom&params=7&layers=32&hidden=4096&gpu=rtx-4090-24gb",
    "hf-does-not-fit": "model=Llama+3.3+70B&gpu=rtx-4090-24gb",
    # inference, llama.cpp
    "llama-3060": "model=Llama+3.1+8B&runtime=llama_cpp&gpu=rtx-3060-12gb",
    "llama-ngl29-ram": (
        "model=Qwen3+30B-A3B&runtime=llama_cpp&gpu=rtx-3060-12gb&ngl=29&seq=16384&ram=32"
    ),
    "llama-ngl-ram-short": "model=Llama+3.3+70B&runtime=llama_cpp&gpu=rtx-3090-24gb&ngl=45&ram=16",
    "llama-own-48gb": "model=Llama+3.3+70B&runtime=llama_cpp&vram=48&gguf=Q4_K_M",
    "llama-slots-q8": (
        "model=Mistral+7B&runtime=llama_cpp&gpu=rtx-4090-24gb&batch=2&ctk=q8_0&ctv=q8_0"
        "&fa=on&ram_bw=60"
    ),
    "llama-hybrid": "model=Falcon-H1+0.5B&runtime=llama_cpp&gpu=rtx-3060-12gb",
    # inference, vLLM
    "vllm-72b-bf16": "model=Qwen2.5+72B&runtime=vllm&gpus=2&tp=2&gpu=h100-sxm-80gb&seq=8192",
    "vllm-72b-fp8": (
        "model=Qwen2.5+72B&runtime=vllm&gpus=2&tp=2&gpu=h100-sxm-80gb&seq=32768&quant=fp8&vkv=fp8"
    ),
    "vllm-no-start": "model=Llama+3.1+8B&runtime=vllm&seq=131072&gpu=rtx-3090-24gb",
    "vllm-own-24gb": "model=Llama+3.1+8B&runtime=vllm&vram=24",
    "vllm-options": (
        "model=Llama+3.1+8B&runtime=vllm&gpu=a100-sxm-80gb&util=0.8&max_seqs=64"
        "&batched=4096&eager=on&block=32"
    ),
    # training
    "ft-hf-80gb": "model=Llama+3.1+8B&mode=full_finetune&gpu=a100-sxm-80gb",
    "ft-deepspeed": DEEPSPEED_8X_A100 + "&train_b=1&price=1.5",
    "ft-deepspeed-opt-offload": DEEPSPEED_8X_A100 + "&opt_offload=on&ram=512&train_b=1&price=1.5",
    "ft-deepspeed-both-offload": DEEPSPEED_8X_A100 + "&opt_offload=on&param_offload=on&ram=512",
    "ft-opt-offload-no-ram": DEEPSPEED_8X_A100 + "&opt_offload=on",
    "ft-param-offload-only": DEEPSPEED_8X_A100 + "&param_offload=on&ram=64",
    "ft-own-80gb-offload": (
        "model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&zero=3&vram=80&opt_offload=on&ram=256"
    ),
    "ft-torchtune-8bit": (
        "model=Mistral+7B&mode=full_finetune&stack=torchtune&optimizer=adamw_8bit"
        "&gpu=h100-sxm-80gb&gpus=2&zero=3"
    ),
    "lora-deepspeed": (
        "model=Llama+3.1+8B&mode=lora&stack=deepspeed&zero=3&gpus=8&gpu=a100-sxm-40gb"
        "&batch=4&ckpt=on&train_b=1&price=1.5"
    ),
    "lora-hf-4090": "model=Mistral+7B&mode=lora&gpu=rtx-4090-24gb&lora_rank=64&lora_targets=all-linear",
    "lora-litgpt-own": "model=Mistral+7B&mode=lora&stack=litgpt&vram=16",
    "qlora-unsloth": "model=Mistral+7B&mode=qlora&stack=unsloth&gpu=rtx-4090-24gb&train_b=0.5",
    "qlora-liger-act-offload": (
        "model=Llama+3.1+8B&mode=qlora&stack=hf_trainer_liger&act_ckpt=full&act_offload=on"
        "&gpu=rtx-3090-24gb&ram=64"
    ),
    "pretrain-megatron": (
        "model=Llama+3.1+8B&mode=pretrain&stack=megatron&gpus=8&tp=2&pp=2&seq_par=on"
        "&gpu=h100-sxm-80gb&train_b=10&price=2"
    ),
    "pretrain-fsdp2": (
        "model=Llama+3.1+8B&mode=pretrain&stack=fsdp2&zero=3&gpus=4&gpu=h100-sxm-80gb"
        "&mixed=on&loss=chunked&opt_impl=foreach"
    ),
    "pretrain-cp": (
        "model=Llama+3.1+8B&mode=pretrain&stack=megatron&gpus=8&cp=2&tp=2&seq=32768"
        "&gpu=h200-sxm-141gb"
    ),
}


def summary(page: str) -> str:
    """The result's summary as rendered, less what a snapshot replaces: the actions (save,
    exports), the API route (a note on the catalogue; test_api_route compares its commands),
    the list of inputs (the live page has the form), the links' targets (and the live page's
    record of the inputs they were built from), and runs of white space (what the removed parts
    leave)."""
    start = page.index('<section id="result"')
    part = page[start : page.index('<div id="more"', start)]
    part = re.sub(r'<div class="actions">.*?</div>', "", part, flags=re.S)
    part = re.sub(r'<details class="api-route".*?</details>', "", part, flags=re.S)
    part = re.sub(r'<dl class="inputs".*?</dl>', "", part, flags=re.S)
    part = re.sub(r'href="[^"]*"', 'href=""', part)
    part = re.sub(r' data-query="[^"]*"', "", part)
    return re.sub(r"\s+", " ", part)


def assumptions(page: str) -> list[str]:
    start = page.index('<section id="result"')
    return re.findall(r'<details class="assumptions">.*?</details>', page[start:], flags=re.S)


def listed_inputs(page: str) -> list[tuple[str, str]]:
    block = re.search(r'<dl class="inputs".*?</dl>', page, flags=re.S)
    assert block is not None
    pairs = re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", block.group(0), flags=re.S)
    return [(html.unescape(label), html.unescape(value)) for label, value in pairs]


def without_link(markdown: str) -> str:
    return "\n".join(line for line in markdown.splitlines() if "://" not in line)


def save(client, query: str, prefix: str = "") -> str:
    response = client.post(f"{prefix}/r/", {"query": query})
    assert response.status_code == 302, response.content[:300]
    return response["Location"]


def test_the_matrix_covers_every_mode_runtime_and_card():
    queries = list(MATRIX.values())
    assert len(queries) >= 30
    for mode in ("full_finetune", "lora", "qlora", "pretrain"):
        assert any(f"mode={mode}" in q for q in queries)
    for runtime in ("llama_cpp", "vllm"):
        assert sum(f"runtime={runtime}" in q for q in queries) >= 5
    assert sum("vram=" in q for q in queries) >= 5
    assert sum("offload=on" in q for q in queries) >= 5


@pytest.mark.parametrize("query", MATRIX.values(), ids=MATRIX.keys())
def test_a_saved_link_shows_what_the_live_page_shows(client, query):
    live = client.get(f"/?{query}")
    assert live.status_code == 200
    assert "result" in live.context, "the setting itself must compute"
    chosen = re.search(r"gpu=([\w-]+)", query)
    if chosen and "vram=" not in query:  # a GPU the catalogue does not know falls back silently
        assert live.context["gpu"].slug == chosen.group(1)
    location = save(client, query)
    saved = client.get(location)
    assert saved.status_code == 200
    live_page, saved_page = live.content.decode(), saved.content.decode()
    assert summary(saved_page) == summary(live_page)
    assert assumptions(saved_page) == assumptions(live_page)

    live_json = client.get(f"/?{query}&format=json").json()
    saved_json = client.get(f"{location}?format=json").json()
    assert saved_json.pop("saved_at")
    assert saved_json.pop("permalink").endswith(location)
    live_json.pop("permalink")
    assert saved_json == live_json

    live_md = client.get(f"/?{query}&format=md").content.decode()
    saved_md = client.get(f"{location}?format=md").content.decode()
    assert without_link(saved_md) == without_link(live_md)
    # The snapshot lists the inputs the Markdown export lists, in the same words.
    assert [f"- {label}: {value}" for label, value in listed_inputs(saved_page)] == [
        line for line in live_md.splitlines() if line.startswith("- ")
    ]


def test_a_saved_link_in_another_language_matches_the_live_page_in_it(client):
    query = MATRIX["ft-deepspeed-opt-offload"]
    live = client.get(f"/es/?{query}").content.decode()
    location = save(client, query, prefix="/es")
    assert location.startswith("/es/r/")
    saved = client.get(location).content.decode()
    assert summary(saved) == summary(live)
    assert "Entrenamiento" in summary(saved)


def test_a_training_snapshot_keeps_speed_time_cost_and_every_input(client):
    """Persona 3 of the walkthrough: full fine-tuning under DeepSpeed ZeRO-3 on 8× A100 40 GB,
    optimizer offload, 512 GB of RAM, 1 billion tokens at 1.5 per GPU-hour."""
    query = MATRIX["ft-deepspeed-opt-offload"]
    live = client.get(f"/?{query}")
    speed = live.context["speed"]
    assert speed.training_tokens_per_s_per_gpu > 0
    assert speed.cost is not None
    saved = client.get(save(client, query))
    page = saved.content.decode()
    assert 'data-testid="speed"' in page
    assert 'data-testid="host-verdict"' in page
    assert 'data-testid="stack-used"' in page
    inputs = dict(listed_inputs(page))
    assert inputs["Training stack"] == "DeepSpeed"
    assert inputs["Optimizer offload to CPU RAM"] == "on"
    assert inputs["Tokens to train on (billions)"] == "1"
    assert inputs["Price per GPU-hour"] == "1.5"
    assert inputs["My system RAM (GB)"] == "512"


def test_markdown_carries_the_stack_offload_ram_and_speed(client):
    markdown = client.get(f"/?{MATRIX['ft-deepspeed-opt-offload']}&format=md").content.decode()
    assert "- Training stack: DeepSpeed" in markdown
    assert "- Optimizer offload to CPU RAM: on" in markdown
    assert "- My system RAM (GB): 512" in markdown
    assert "optimizer in CPU RAM" in markdown  # the switches as the stack ran them
    assert "System RAM: " in markdown
    assert "GiB of system RAM needed: fits in your 512.00 GiB" in markdown
    assert re.search(r"Training: \*\*[\d,]+ tokens/s per GPU\*\*", markdown)
    assert "the whole run takes" in markdown
    assert "and costs" in markdown


def test_markdown_carries_the_vllm_pool_and_its_concurrency(client):
    """Persona 4: Qwen2.5 72B, FP8 weights and KV cache, 2× H100, 32k context. The pool's
    tokens and the concurrency are the JSON export's own figures, formatted."""
    query = MATRIX["vllm-72b-fp8"]
    started = client.get(f"/?{query}&format=json").json()["vllm"]
    markdown = client.get(f"/?{query}&format=md").content.decode()
    tokens = f"{started['kv_cache_tokens']:,}"
    concurrency = f"{started['max_concurrency']:.2f}"
    assert (
        f"vLLM serves {concurrency} concurrent requests of 32,768 tokens: "
        f"its KV-cache pool holds {tokens} tokens."
    ) in markdown


def test_the_json_export_carries_the_ram_given(client):
    exported = client.get(f"/?{MATRIX['ft-deepspeed-opt-offload']}&format=json").json()
    assert exported["inputs"]["ram_gb"] == 512
    assert exported["inputs"]["training_stack"] == "deepspeed"
    assert exported["inputs"]["optimizer_offload"] is True
    assert exported["speed"]["cost"] is not None


def test_a_snapshot_keeps_its_speed_after_the_gpu_is_edited(client):
    """The speed is stored, not recomputed with today's GPU figures."""
    query = "model=Llama+3.1+8B&gpu=rtx-4090-24gb"
    location = save(client, query)
    before = client.get(location).context["speed"].decode_tokens_per_s
    gpu = GpuSpec.objects.get(slug="rtx-4090-24gb")
    assert gpu.bandwidth_gb_s
    gpu.bandwidth_gb_s = gpu.bandwidth_gb_s / 4
    gpu.save()
    assert client.get(f"/?{query}").context["speed"].decode_tokens_per_s < before
    assert client.get(location).context["speed"].decode_tokens_per_s == before


def test_a_snapshot_keeps_its_figures_after_the_preset_is_edited(client):
    query = MATRIX["llama-3060"]
    location = save(client, query)
    before = client.get(location).content.decode()
    preset = ModelPreset.objects.get(slug="llama-3.1-8b")
    preset.config = {**preset.config, "num_hidden_layers": 16}
    preset.hf_repo = "someone/else"
    preset.save()
    after = client.get(location).content.decode()
    assert "has changed since this link was saved" in after
    assert summary(after) == summary(before)


def test_every_source_link_of_a_snapshot_has_its_target(client):
    page = client.get(save(client, MATRIX["ft-deepspeed-opt-offload"])).content.decode()
    targets = re.findall(r'href="#(ref-[\w-]+)"', page)
    assert targets
    assert [t for t in targets if f'id="{t}"' not in page] == []


def test_a_snapshot_links_its_suggestion_to_the_calculator(client):
    """gpt-oss-20b is published in MXFP4: the page suggests INT4, on a saved page too, with a
    link to the calculator rather than to the snapshot itself."""
    page = client.get(save(client, MATRIX["hf-prequantized"])).content.decode()
    link = re.search(r'data-testid="checkpoint-mismatch">.*?<a href="([^"]*)"', page, flags=re.S)
    assert link is not None
    assert html.unescape(link.group(1)).startswith("/?model=gpt-oss-20b&")
    assert "precision=int4" in link.group(1)


@pytest.mark.parametrize(
    "query",
    [MATRIX["llama-ngl29-ram"], MATRIX["ft-deepspeed-opt-offload"]],
    ids=["llama", "offload"],
)
def test_a_snapshot_saved_before_the_figures_were_kept_still_opens(client, query):
    """A row as the previous version stored it (no calculation_json): the page, its Markdown and
    its JSON open, without the speed they did not keep."""
    location = save(client, query)
    row = SavedResult.objects.get(pk=location.rsplit("/", 1)[1])
    SavedResult.objects.filter(pk=row.pk).update(calculation_json={})
    page = client.get(location)
    assert page.status_code == 200
    assert 'data-testid="speed"' not in page.content.decode()
    assert 'data-testid="host-ram"' in page.content.decode()
    assert client.get(f"{location}?format=md").status_code == 200
    assert client.get(f"{location}?format=json").json()["speed"] is None


def test_a_snapshot_this_version_cannot_read_says_so(client):
    location = save(client, MATRIX["hf-4090"])
    SavedResult.objects.filter(pk=location.rsplit("/", 1)[1]).update(
        result_json={"no longer": "a result"}
    )
    page = client.get(location)
    assert page.status_code == 200
    assert "saved by an older version of the calculator" in page.content.decode()
    assert client.get(f"{location}?format=json").status_code == 200

"""The runtime choice (issue 13) on every surface: page, permalink, JSON export, API and CLI.

Expected figures come from published start-up logs (validation/published/*_logs.json, each with its
source link) or from hand calculations written out here from published configs:
Qwen2.5 14B (Qwen/Qwen2.5-14B config.json: 48 layers, 8 KV heads of 128) and Llama 3.1 8B
(meta-llama/Llama-3.1-8B config.json: 32 layers, 8 KV heads of 128, 131,072-token window).
"""

import io
import json
import re
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rendered responses are cached; these tests read the context of a fresh render."""
    cache.clear()
    yield
    cache.clear()


ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
GIB = 1 << 30


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def published(runtime: str, log_id: str) -> dict:
    logs = json.loads((ROOT / f"validation/published/{runtime}_logs.json").read_text())["logs"]
    return next(log for log in logs if log["id"] == log_id)


# ollama/ollama#9091: Qwen2.5 14B Q4_K_M, 4 slots of 2,048 tokens, no flash attention, all 49 layers.
QWEN14_OLLAMA = (
    "/?model=Qwen2.5+14B&runtime=llama_cpp&gguf=Q4_K_M&seq=2048&batch=4&fa=off"
    "&nbatch=2048&ubatch=512&gpu=rtx-4090-24gb"
)


def test_llama_cpp_page_shows_the_buffers_the_log_printed(client):
    log = published("llama_cpp", "ollama-9091-qwen2.5-14b")
    response = client.get(QWEN14_OLLAMA)
    assert response.status_code == 200
    result = response.context["result"]
    assert result.runtime == "llama_cpp"
    model_gpu_mib = result.llama_cpp.model_buffer.gpu / MIB
    assert model_gpu_mib == pytest.approx(log["compare"]["model_buffer_gpu_mib"], rel=0.05)
    # KV: 48 layers × (K + V) × 8,192 cells × 8 heads × 128 × 2 bytes (f16) = 1,536 MiB, as printed.
    kv_by_hand = 48 * 2 * 8192 * 8 * 128 * 2
    assert log["compare"]["kv_buffer_mib"] * MIB == kv_by_hand
    assert result.llama_cpp.kv_buffer.gpu == kv_by_hand
    assert result.breakdown.kv_cache == kv_by_hand
    page = text(response)
    assert "What llama.cpp will print at load" in page
    assert "KV buffer size 1.50" in page
    assert "llama-server" in page  # the command that reproduces the settings


def test_partial_offload_moves_layers_and_their_bytes_to_system_ram(client):
    full = client.get(QWEN14_OLLAMA).context["result"]
    partial = client.get(QWEN14_OLLAMA + "&ngl=20").context["result"]
    assert partial.llama_cpp.gpu_layers == 20
    # What leaves the GPU arrives on the host (model and KV of the 29 layers left behind).
    moved = full.llama_cpp.model_buffer.gpu - partial.llama_cpp.model_buffer.gpu
    assert partial.llama_cpp.model_buffer.host - full.llama_cpp.model_buffer.host == moved
    assert partial.llama_cpp.kv_buffer.host == 29 * 2 * 8192 * 8 * 128 * 2
    response = client.get(QWEN14_OLLAMA + "&ngl=20")
    assert "System RAM:" in text(response)
    assert "20 of 49 layers on the GPU" in text(response)


# Granite 4.0 H Tiny (presets/models/granite.json, config: 36 Mamba-2 layers of 48 heads x 64,
# 1 group, state 128, d_conv 4; 4 attention layers of 4 KV heads x 128), 4 slots of 4,096 tokens.
GRANITE_H_TINY = (
    "/?model=Granite+4.0+H+Tiny&runtime=llama_cpp&gguf=Q4_K_M&seq=4096&batch=4&gpu=h100-sxm-80gb"
)


def test_llama_cpp_total_and_log_table_carry_the_rs_buffer_of_a_hybrid(client):
    response = client.get(GRANITE_H_TINY)
    result = response.context["result"]
    loaded = result.llama_cpp
    # RS buffer by hand (llama.cpp src/llama-hparams.cpp): per Mamba layer and slot, F32
    # n_embd_r = (4 - 1) x (3072 + 2 x 1 x 128) and n_embd_s = 128 x 3072.
    rs_by_hand = 4 * 36 * 4 * (3 * (3072 + 2 * 128) + 128 * 3072)
    assert rs_by_hand == 232_243_200
    assert loaded.recurrent_buffer.gpu == rs_by_hand
    # KV: 4 attention layers x (K + V) x 16,384 cells x 4 heads x 128 x 2 bytes (f16).
    kv_by_hand = 4 * 2 * 16384 * 4 * 128 * 2
    assert loaded.kv_buffer.gpu == kv_by_hand
    # The total counts it beside the KV buffer: what the -ngl and -c searches compare.
    assert result.breakdown.kv_cache == kv_by_hand + rs_by_hand
    assert result.total_bytes == loaded.gpu_bytes + result.breakdown.cuda_context
    buffers = {b.log_name: b for b in response.context["runtime_buffers"]}
    assert buffers["RS buffer size"].gpu_bytes == rs_by_hand
    assert buffers["RS buffer size"].host_bytes == 0
    page = text(response)
    assert "RS buffer size 0.22" in page  # 221.5 MiB in GiB
    assert "keep a recurrent state" in page
    # -ngl 21 of 41: layers 20..39 on the GPU, 18 of them Mamba (attention on 5, 15, 25, 35).
    partial = client.get(GRANITE_H_TINY + "&ngl=21").context["result"].llama_cpp
    assert partial.recurrent_buffer.gpu == rs_by_hand * 18 // 36
    assert partial.recurrent_buffer.host == rs_by_hand * 18 // 36


def test_dense_model_log_table_has_no_rs_line(client):
    response = client.get(QWEN14_OLLAMA)
    assert response.context["result"].llama_cpp.recurrent_buffer.total == 0
    assert "RS buffer size" not in text(response)


def test_llama_cpp_levers_offer_the_most_layers_that_fit(client):
    # Llama 3.1 70B at Q4_K_M is about 40 GiB: it cannot sit whole on a 24 GB card.
    query = "/?model=Llama+3.1+70B&runtime=llama_cpp&gguf=Q4_K_M&seq=4096&batch=1&gpu=rtx-4090-24gb"
    more = client.get(query)  # a full page carries the levers (htmx loads them after)
    levers = more.context["llama_levers"]
    assert 0 < levers["gpu_layers"] < 81
    assert levers["n_ctx"] == 0
    usable = more.context["gpu"].usable_bytes
    fits = client.get(query + f"&ngl={levers['gpu_layers']}").context["result"]
    over = client.get(query + f"&ngl={levers['gpu_layers'] + 1}").context["result"]
    assert fits.total_bytes <= usable < over.total_bytes


def test_vllm_page_reads_the_pool_and_the_concurrency(client):
    # vllm-project/vllm#10517: Llama 3.1 8B on an RTX 3090, max_model_len 20,000.
    log = published("vllm", "vllm-10517-llama3.1-8b-3090-20k")
    response = client.get(
        "/?model=Llama+3.1+8B&runtime=vllm&seq=20000&batched=20000&max_seqs=256&gpu=rtx-3090-24gb"
    )
    assert response.status_code == 200
    started = response.context["result"].vllm
    assert started.weights / GIB == pytest.approx(log["compare"]["weights_gib"], rel=0.03)
    assert started.kv_cache_tokens == pytest.approx(log["compare"]["kv_cache_tokens"], rel=0.10)
    page = text(response)
    assert "What vLLM will print at start-up" in page
    assert re.search(r"vLLM serves [\d.]+ concurrent requests of 20,000 tokens", page)
    assert "vllm serve" in page


def test_vllm_verdict_says_no_when_one_request_does_not_fit_the_pool(client):
    # One 131,072-token request of Llama 3.1 8B needs 131,072 × 32 layers × 2 × 8 × 128 × 2 B
    # = 16 GiB of KV cache; a 24 GB card leaves about 4 GiB after 15 GiB of weights.
    response = client.get("/?model=Llama+3.1+8B&runtime=vllm&seq=131072&gpu=rtx-3090-24gb")
    started = response.context["result"].vllm
    assert started.kv_bytes_per_token * 131072 == 16 * GIB
    assert started.kv_cache < 16 * GIB
    assert response.context["verdict"].fits is False
    assert "vLLM will not start" in text(response)
    longest = response.context["vllm_levers"]["longest"]
    assert 0 < longest < 131072
    shorter = client.get(f"/?model=Llama+3.1+8B&runtime=vllm&seq={longest}&gpu=rtx-3090-24gb")
    assert shorter.context["verdict"].fits is True


def test_a_saved_vllm_result_is_judged_as_vllm_starts(client):
    """The same 131,072-token request as above: its saved page, its Markdown and its JSON say
    "does not fit", like the live page, although the start-up share (0.9 of the card) is less
    than the card."""
    query = "model=Llama+3.1+8B&runtime=vllm&seq=131072&gpu=rtx-3090-24gb"
    live = client.get(f"/?{query}&format=json").json()
    assert live["verdict"]["fits"] is False
    location = client.post("/r/", {"query": query})["Location"]
    saved = client.get(location)
    assert saved.context["result"].total_bytes < saved.context["verdict"].usable_bytes
    assert saved.context["verdict"].fits is False
    assert "Does not fit on" in text(saved)
    assert "does not fit" in client.get(location + "?format=md").content.decode()
    exported = client.get(location + "?format=json").json()
    assert exported["verdict"] == live["verdict"]


def test_a_serving_runtime_with_a_training_mode_is_a_field_message(client):
    response = client.get("/?model=Llama+3.1+8B&runtime=vllm&mode=lora", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "serve models (inference)" in response.content.decode()


def test_the_permalink_export_echoes_the_runtime_and_its_options(client):
    response = client.get(QWEN14_OLLAMA + "&format=json")
    payload = json.loads(response.content)
    assert payload["inputs"]["runtime"] == "llama_cpp"
    assert payload["inputs"]["llama_cpp"]["n_ctx"] == 8192
    assert payload["inputs"]["llama_cpp"]["flash_attention"] is False
    assert payload["llama_cpp"]["kv_buffer"]["gpu"] == 1536 * MIB
    assert "llama_server" in payload["commands"]


def test_api_takes_the_runtime_and_the_gpu_sizes_the_vllm_pool(client):
    body = {
        "model": {"preset": "llama-3.1-8b"},
        "runtime": "vllm",
        "vllm": {"max_model_len": 20000, "max_num_batched_tokens": 20000, "max_num_seqs": 256},
        "gpu": "rtx-3090-24gb",
    }
    response = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    payload = response.json()
    log = published("vllm", "vllm-10517-llama3.1-8b-3090-20k")
    assert payload["vllm"]["weights"] / GIB == pytest.approx(
        log["compare"]["weights_gib"], rel=0.03
    )
    assert payload["verdict"]["fits"] is True
    assert payload["commands"]["vllm_serve"].startswith("vllm serve")
    del body["gpu"]
    refused = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert refused.status_code == 422
    assert "gpu" in refused.content.decode()


def test_api_permalink_get_matches_the_page(client):
    api = client.get("/api/v1/estimate" + QWEN14_OLLAMA[1:]).json()
    page = json.loads(client.get(QWEN14_OLLAMA + "&format=json").content)
    assert api["total_bytes"] == page["total_bytes"]
    assert api["llama_cpp"] == page["llama_cpp"]


def test_cli_takes_the_runtime_and_a_gpu(tmp_path):
    path = tmp_path / "request.json"
    config = json.loads((ROOT / "presets/models/llama.json").read_text())
    llama = next(p for p in config["presets"] if p["slug"] == "llama-3.1-8b")
    request = {
        "model": {"config": llama["config"]},
        "runtime": "vllm",
        "vllm": {"max_model_len": 8192},
    }
    path.write_text(json.dumps(request))
    out = io.StringIO()
    call_command("estimate", "--json", str(path), "--gpu", "rtx-3090-24gb", stdout=out)
    payload = json.loads(out.getvalue())
    assert payload["runtime"] == "vllm"
    assert payload["verdict"]["gpu"] == "rtx-3090-24gb"
    assert payload["vllm"]["max_model_len"] == 8192
    with pytest.raises(CommandError) as refused:
        call_command("estimate", "--json", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert refused.value.returncode == 2


def test_a_pre_quantized_checkpoint_at_another_precision_is_flagged(client):
    # deepseek-ai/DeepSeek-V3 config.json: "quantization_config": {"quant_method": "fp8", ...}
    flagged = client.get("/?model=DeepSeek+V3&precision=bf16&gpus=8&tp=8&gpu=h200-sxm-141gb")
    assert "published pre-quantized (fp8)" in text(flagged)
    matched = client.get("/?model=DeepSeek+V3&precision=fp8&gpus=8&tp=8&gpu=h200-sxm-141gb")
    assert "published pre-quantized" not in text(matched)


def test_the_vllm_command_leaves_the_checkpoint_format_to_vllm(client):
    response = client.get(
        "/?model=DeepSeek+V3&runtime=vllm&gpus=8&tp=8&gpu=h200-sxm-141gb&seq=8192"
    )
    command = next(c for c in response.context["ready_commands"] if c.key == "vllm_serve")
    assert "--quantization" not in command.text
    assert "--tensor-parallel-size 8" in command.text


def test_api_seq_len_is_vllms_max_model_len_as_on_the_page(client):
    # Issue 25, misleads 10: the page maps its sequence length to --max-model-len (README's
    # runtime table, "seq → max_model_len"); a POST with seq_len and no vllm.max_model_len got
    # the model's window (Llama 3.1 8B: 131,072 tokens) instead.
    body = {
        "model": {"preset": "llama-3.1-8b"},
        "runtime": "vllm",
        "seq_len": 32768,
        "gpu": "h100-sxm-80gb",
    }
    post = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert post.status_code == 200, post.content
    api = post.json()
    assert api["vllm"]["max_model_len"] == 32768
    page = json.loads(
        client.get(
            "/?model=Llama+3.1+8B&runtime=vllm&seq=32768&gpu=h100-sxm-80gb&format=json"
        ).content
    )
    assert api["vllm"] == page["vllm"]
    assert api["total_bytes"] == page["total_bytes"]
    # vllm.max_model_len, when given, wins; with neither, vLLM's own default: the window.
    body["vllm"] = {"max_model_len": 8192}
    given = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert given.json()["vllm"]["max_model_len"] == 8192
    del body["vllm"], body["seq_len"]
    bare = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert bare.json()["vllm"]["max_model_len"] == 131072


def test_cli_seq_len_is_vllms_max_model_len_as_on_the_page(tmp_path):
    path = tmp_path / "request.json"
    config = json.loads((ROOT / "presets/models/llama.json").read_text())
    llama = next(p for p in config["presets"] if p["slug"] == "llama-3.1-8b")
    path.write_text(
        json.dumps({"model": {"config": llama["config"]}, "runtime": "vllm", "seq_len": 8192})
    )
    out = io.StringIO()
    call_command("estimate", "--json", str(path), "--gpu", "rtx-3090-24gb", stdout=out)
    assert json.loads(out.getvalue())["vllm"]["max_model_len"] == 8192


def test_the_longest_max_model_len_past_the_trained_window_has_its_caveat(client):
    # Llama 3.1 8B on an H100 80GB: K and V of 32 layers × 8 heads × 128 × 2 bytes = 128 KiB a
    # token; 0.9 × 79.6 GiB less 15 GiB of weights and a few GiB of profiling and non-torch
    # memory leaves about 50 GiB, some 400,000 tokens: past the 131,072 the model was trained
    # for (max_position_embeddings in meta-llama/Llama-3.1-8B config.json), which vLLM refuses
    # unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm/config: _get_and_verify_max_len).
    response = client.get("/?model=Llama+3.1+8B&runtime=vllm&seq=8192&gpu=h100-sxm-80gb")
    longest = response.context["vllm_levers"]["longest"]
    assert longest > 131072
    page = text(response)
    assert "beyond the 131,072-token context this model was trained for" in page
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in page
    # Inside the window (a 24 GB card holds fewer tokens) there is nothing to warn about.
    small = text(client.get("/?model=Llama+3.1+8B&runtime=vllm&seq=8192&gpu=rtx-3090-24gb"))
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in small


# Gemma 2 9B (google/gemma-2-9b config.json via presets/models/gemma.json: 42 layers, every other
# one sliding with a 4,096-token window, 8 KV heads of 256): 4 slots of 8,192 tokens.
GEMMA2_SLOTS = "/?model=gemma-2-9b&runtime=llama_cpp&seq=8192&batch=4&gpu=h100-sxm-80gb"


@pytest.mark.parametrize(
    ("extra", "swa_cells", "flags"),
    [
        # -np 4: a stream per slot of pad(32768 / 4, 256) = 8192 cells, whose sliding cache holds
        # pad(min(8192, 4096 + 512), 256) = 4608: 18,432 in all (llama-kv-cache-iswa.cpp).
        ("", 4 * 4608, []),
        # -kvu: one stream; its sliding cache holds pad(min(32768, 4 x 4096 + 512), 256) = 16,896.
        ("&kvu=on", 16896, ["-kvu"]),
        # --swa-full: the sliding layers get the whole context.
        ("&swa=on", 32768, ["--swa-full"]),
    ],
)
def test_the_page_takes_swa_full_and_the_unified_cache(client, extra, swa_cells, flags):
    response = client.get(GEMMA2_SLOTS + extra)
    assert response.status_code == 200
    loaded = response.context["result"].llama_cpp
    assert (loaded.kv_cells_full, loaded.kv_cells_swa) == (32768, swa_cells)
    per_cell = 2 * 8 * 256 * 2  # K + V of one layer, f16
    assert loaded.kv_buffer.total == 21 * per_cell * 32768 + 21 * per_cell * swa_cells
    page = response.content.decode()
    for flag in flags:
        assert f" {flag}" in page
    api = client.get("/api/v1/estimate" + (GEMMA2_SLOTS + extra)[1:]).json()
    assert api["llama_cpp"]["kv_cells_swa"] == swa_cells


def test_a_moe_too_big_for_the_card_is_offered_experts_in_ram(client):
    # gpt-oss-120b (MXFP4, 63 GB) on a 24 GB RTX 3090: the lever's link keeps every layer on
    # the GPU with the experts of the first N layers in RAM, and that setup fits the card.
    response = client.get("/?model=gpt-oss-120b&runtime=llama_cpp&gpu=rtx-3090-24gb&ram=64")
    moe = response.context["llama_levers"]["experts_in_ram"]
    assert 0 < moe["layers"] < moe["of"] == 36
    assert not moe["ram_short"]
    assert f"ncmoe={moe['layers']}" in response.content.decode()
    followed = client.get(
        f"/?model=gpt-oss-120b&runtime=llama_cpp&gpu=rtx-3090-24gb&ram=64&ncmoe={moe['layers']}"
    )
    assert followed.context["verdict"].fits
    assert "--n-cpu-moe" in followed.content.decode()


def test_the_gpu_list_names_the_cards_that_hold_a_moe_with_experts_in_ram(client):
    # gpt-oss-120b (63 GB in MXFP4) needs an 80 GB card whole; a 12 GB RTX 3060 holds it with
    # the experts of enough layers in RAM when the machine has 64 GB, and not with 16 GB.
    roomy = client.get("/?model=gpt-oss-120b&runtime=llama_cpp&gpu=rtx-3090-24gb&ram=64")
    groups = roomy.context["fits"]
    whole = next(group for group in groups if group.count == 1 and not group.experts_in_ram)
    offloaded = next(group for group in groups if group.experts_in_ram)
    assert groups.index(offloaded) == groups.index(whole) + 1
    slugs = {gpu.slug for gpu in offloaded.gpus}
    assert "rtx-3060-12gb" in slugs
    assert not slugs & {gpu.slug for gpu in whole.gpus}
    assert "1, experts in RAM" in roomy.content.decode()
    # With 16 GB of RAM only cards that leave little in RAM qualify (a 48 GB card), not the 3060.
    short = client.get("/?model=gpt-oss-120b&runtime=llama_cpp&gpu=rtx-3090-24gb&ram=16")
    short_slugs = {
        gpu.slug for group in short.context["fits"] if group.experts_in_ram for gpu in group.gpus
    }
    assert "rtx-3060-12gb" not in short_slugs
    # A dense model has no experts to move.
    dense = client.get("/?model=Llama+3.1+70B&runtime=llama_cpp&gpu=rtx-3090-24gb&ram=64")
    assert not any(group.experts_in_ram for group in dense.context["fits"])


TWO_3090 = (
    "/?model=Llama+3.1+8B&runtime=llama_cpp&gguf=Q4_K_M&gpu=rtx-3090-24gb&gpus=2&seq=8192&batch=1"
)


def test_two_gpus_get_a_line_per_device_as_the_log_prints_them(client):
    body = text(client.get(TWO_3090))
    for line in ("CUDA0 model buffer size", "CUDA1 model buffer size", "CUDA0 KV buffer size"):
        assert line in body
    assert "CUDA1 compute buffer size" in body
    assert "CPU_Mapped model buffer size" in body  # the token embeddings stay in RAM
    assert "per GPU" in body
    # Llama 3.1 8B's KV at 8,192 cells: 2 x 8 KV heads x 128 x 2 bytes x 8192 = 32 MiB a layer;
    # GPU 0 holds layers 0..16 of the 33 slots (17 layers: 544 MiB = 0.53 GiB), GPU 1 the other
    # 15 layers and the output layer (480 MiB = 0.47 GiB).
    assert re.search(r"CUDA0 KV buffer size 0\.53 ", body)
    assert re.search(r"CUDA1 KV buffer size 0\.47 ", body)
    api = client.get("/api/v1/estimate?" + TWO_3090.split("?", 1)[1]).json()
    assert [device["layers"] for device in api["llama_cpp"]["devices"]] == [17, 16]


def test_llama_cpp_asks_for_no_tensor_parallelism(client):
    body = text(client.get(TWO_3090 + "&tp=2"))
    assert "llama.cpp splits the layers over the GPUs rather than each layer" in body


CPU_ONLY = "/?model=Llama+3.1+8B&runtime=llama_cpp&gguf=Q4_K_M&gpu=cpu&seq=4096&batch=1&ram=32"


def test_no_gpu_gives_the_ram_verdict_and_generation_from_ram_bandwidth(client):
    """Issue 28, CPU only: every layer stays on the CPU (-ngl 0), the figure is what llama.cpp
    keeps in system RAM, the verdict is the RAM's, and generation reads every weight from RAM
    once per token, so it scales with the RAM bandwidth; prompt speed (the CPU's cores) is not
    given."""
    body = text(client.get(CPU_ONLY))
    assert "of system RAM, no GPU" in body
    assert "0 of 33 layers on the GPU" in body
    assert "of system RAM needed: fits in your 32.00 GiB" in body
    assert "Fits on" not in body  # no card, no card verdict
    assert "Prompt:" not in body
    api = client.get("/api/v1/estimate?" + CPU_ONLY.split("?", 1)[1]).json()
    assert api["llama_cpp"]["gpu_layers"] == 0
    # The API gives the same CPU generation speed, timed on the RAM (no card needed).
    assert api["speed_unavailable"] is None
    assert api["speed"]["backend"] == "cpu"
    assert f"Generation: {api['speed']['decode_tokens_per_s']:.0f} tokens/s" in body
    # 2 GiB of RAM cannot hold the 4.58 GiB Q4_K_M file: no speed, and the API says why.
    short = client.get("/api/v1/estimate?" + CPU_ONLY.split("?", 1)[1].replace("ram=32", "ram=2"))
    assert short.json()["speed"] is None
    assert short.json()["speed_unavailable"] == "ram_short"
    assert f"{api['host_bytes'] / GIB:.2f} GiB of system RAM, no GPU" in body

    def generation(bandwidth: str) -> int:
        found = re.search(r"Generation: (\d+) tokens/s", text(client.get(CPU_ONLY + bandwidth)))
        assert found
        return int(found.group(1))

    # Two channels of DDR5-5600 (89.6 GB/s, the default) against four (179.2 GB/s).
    assert generation("&ram_bw=179.2") in {
        2 * generation("") - 1,
        2 * generation(""),
        2 * generation("") + 1,
    }


def test_no_gpu_with_another_runtime_says_to_choose_llama_cpp(client):
    body = text(client.get("/?model=Llama+3.1+8B&gpu=cpu&seq=4096"))
    assert "Without a GPU the estimate is for llama.cpp" in body


def test_with_two_gpus_the_page_says_where_ollama_would_put_the_model(client):
    """Ollama's scheduler (ollama/ollama@fb30760 server/sched.go selectLlamaServerPlacement)
    loads a model alone on one GPU when it needs at most 80% of that GPU's memory: 80% of a
    3090's 24 GiB is 19.20 GiB. Llama 3.1 8B Q4_K_M (a 4.58 GiB file) is far below it; Llama 3.3
    70B Q4_K_M (a 39.59 GiB file, the GGUF line of the same page) is far above it."""
    small = text(client.get(TWO_3090))
    assert "Ollama would load it on one GPU instead (--split-mode none)" in small
    assert "within 80% of the card (19.20 GiB)" in small
    large = text(client.get(TWO_3090.replace("Llama+3.1+8B", "Llama+3.3+70B")))
    assert "Ollama would split it over the GPUs too" in large
    assert "more than 80% of the card (19.20 GiB)" in large
    german = text(client.get("/de" + TWO_3090))
    assert "innerhalb von 80 % der Karte" in german


def test_the_markdown_export_says_the_gpus_or_that_there_is_none(client):
    api = client.get("/api/v1/estimate?" + CPU_ONLY.split("?", 1)[1]).json()
    cpu = client.get(CPU_ONLY + "&format=md").content.decode()
    assert cpu.splitlines()[0].endswith(f"{api['host_bytes'] / GIB:.2f} GiB of system RAM, no GPU")
    two = client.get(TWO_3090 + "&format=md").content.decode()
    assert "- Number of GPUs: 2" in two
    assert "- -sm: layer" in two
    assert "per GPU" in two.splitlines()[0]

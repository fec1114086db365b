"""From a result to its API request and CLI command (issue 25, persona 4, defects 6 and 7).

The result block "Use from the API or the command line" shows a curl that POSTs a body, the
GET form of the API with the result's link query, and the ``manage.py estimate`` command. The
reference for each is the page itself (its result's ``total_bytes``): the claim is that what the
block shows gives that result again. The figures the Markdown repeats are read from the page's
HTML, and checked against vLLM's own rule for the concurrency.
"""

import html
import io
import json
import re
import shlex
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command

from calculator.catalogue.models import ModelPreset
from calculator.catalogue.selectors import preset_resolve
from calculator.catalogue.services import pasted_config_store

pytestmark = pytest.mark.django_db

DEEPSPEED_8X_A100 = (
    "model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&zero=3&gpus=8"
    "&gpu=a100-sxm-40gb&batch=4&seq=4096&ckpt=on"
)
QWEN_72B_FP8 = (
    "model=Qwen2.5+72B&runtime=vllm&gpus=2&tp=2&gpu=h100-sxm-80gb&seq=32768&quant=fp8&vkv=fp8"
)
MATRIX = {
    "transformers": "model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=8192",
    "transformers-own-card": "model=Llama+3.1+8B&vram=12&precision=int4",
    "llama-cpp": "model=Qwen3+30B-A3B&runtime=llama_cpp&gpu=rtx-3060-12gb&ngl=24&seq=16384&ram=64",
    "vllm": QWEN_72B_FP8,
    "vllm-own-card": "model=Llama+3.1+8B&runtime=vllm&vram=24&seq=8192",
    "full-finetune-deepspeed": DEEPSPEED_8X_A100 + "&opt_offload=on&ram=512&train_b=1&price=1.5",
    "lora": "model=Mistral+7B&mode=lora&gpu=rtx-4090-24gb&lora_rank=64&lora_targets=all-linear",
    "qlora": "model=Mistral+7B&mode=qlora&stack=unsloth&gpu=rtx-4090-24gb&batch=2",
    "custom-shape": "source=custom&params=7&layers=32&hidden=4096&gpu=rtx-4090-24gb",
}


def route_text(body: str, name: str) -> str:
    """The text of one of the block's commands, as the copy button copies it (textContent)."""
    found = re.search(rf'<code id="api-route-{name}">(.*?)</code>', body, re.S)
    assert found, f"no {name} in the page"
    return html.unescape(found.group(1))


def heredoc(command: str) -> tuple[str, str]:
    """The command line before ``<<'JSON'``, and the document the shell feeds it."""
    head, _, rest = command.partition(" <<'JSON'\n")
    document, _, tail = rest.rpartition("\nJSON")
    assert tail == "", "the heredoc ends the command"
    return head, document


def post(client, body: dict):
    return client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")


def run_cli(monkeypatch, command: str) -> dict:
    """The CLI command as shown, its heredoc on standard input."""
    head, document = heredoc(command)
    words = shlex.split(head)
    assert words[:3] == ["python", "manage.py", "estimate"]
    monkeypatch.setattr("sys.stdin", io.StringIO(document))
    out = io.StringIO()
    call_command(*words[2:], stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def pasted_config(llama31_8b) -> str:
    """A config pasted on the page and stored under its id (the page's ``cfg=`` link)."""
    return pasted_config_store(text=json.dumps(llama31_8b), owner="test")


def queries(pasted_config: str) -> dict[str, str]:
    return {**MATRIX, "pasted-config": f"source=config&cfg={pasted_config}&gpu=rtx-4090-24gb"}


@pytest.mark.parametrize("name", [*MATRIX, "pasted-config"])
def test_the_curl_the_get_address_and_the_cli_give_the_pages_total(
    client, monkeypatch, pasted_config, name
):
    query = queries(pasted_config)[name]
    page = client.get(f"/?{query}")
    assert page.status_code == 200
    total = page.context["result"].total_bytes
    body = page.content.decode()

    head, document = heredoc(route_text(body, "curl"))
    assert shlex.split(head)[:5] == [
        "curl",
        "-s",
        "-X",
        "POST",
        "http://testserver/api/v1/estimate",
    ]
    posted = post(client, json.loads(document))
    assert posted.status_code == 200, posted.content
    assert posted.json()["total_bytes"] == total

    address = urlsplit(route_text(body, "get"))
    assert address.path == "/api/v1/estimate"
    got = client.get(f"{address.path}?{address.query}")
    assert got.status_code == 200, got.content
    assert got.json()["total_bytes"] == total

    assert run_cli(monkeypatch, route_text(body, "cli"))["total_bytes"] == total


@pytest.mark.parametrize("name", [*MATRIX, "pasted-config"])
def test_the_json_exports_inputs_posted_back_give_the_same_total(client, pasted_config, name):
    query = queries(pasted_config)[name]
    exported = client.get(f"/?{query}&format=json").json()
    posted = post(client, exported["inputs"])
    assert posted.status_code == 200, posted.content
    assert posted.json()["total_bytes"] == exported["total_bytes"]
    # And the API's own answer carries a body that gives it again.
    again = post(client, posted.json()["inputs"])
    assert again.json()["total_bytes"] == exported["total_bytes"]


def test_the_body_names_the_model_and_gpu_as_the_api_takes_them(client, pasted_config):
    preset = client.get(f"/?{MATRIX['vllm']}&format=json").json()["inputs"]
    assert preset["model"] == {"preset": "qwen2.5-72b"}
    assert preset["gpu"] == "h100-sxm-80gb"
    assert preset["vllm"]["quantization"] == "fp8"
    assert preset["vllm"]["max_model_len"] == 32768
    custom = client.get(f"/?{MATRIX['custom-shape']}&format=json").json()["inputs"]
    assert custom["model"]["params_billion"] == 7
    assert custom["model"]["num_layers"] == 32
    pasted = client.get(f"/?{queries(pasted_config)['pasted-config']}&format=json").json()
    assert pasted["inputs"]["model"]["config"]["hidden_size"] == 4096  # Llama 3.1 8B config.json
    own = client.get(f"/?{MATRIX['vllm-own-card']}&format=json").json()["inputs"]
    assert own["gpu"] is None  # a memory size has no slug; vLLM's share of it is in the body
    # 24 GB as the page reads "my card's memory" (reverse.tier_usable_bytes), 0.9 of it vLLM's.
    assert own["vllm"]["gpu_memory_bytes"] > 20 * 2**30


def test_every_catalogue_preset_is_found_by_the_slug_the_body_names_it_by():
    presets = list(ModelPreset.objects.filter(active=True, reviewed=True))
    assert len(presets) > 100
    for preset in presets:
        assert preset_resolve(text=preset.slug).preset == preset, preset.slug


def test_the_custom_shapes_weights_are_the_hand_calculation(client):
    # 7B parameters at bf16: 7e9 × 2 bytes, whichever route asks.
    body = client.get(f"/?{MATRIX['custom-shape']}&format=json").json()["inputs"]
    assert post(client, body).json()["breakdown"]["weights"] == 14_000_000_000


def test_the_cli_takes_a_memory_size_as_the_page_does(client, monkeypatch):
    body = client.get(f"/?{MATRIX['vllm-own-card']}").content.decode()
    command = route_text(body, "cli")
    assert command.startswith("python manage.py estimate --vram 24 --json - <<'JSON'\n")
    assert run_cli(monkeypatch, command)["verdict"]["gpu_name"] == "your 24 GB card"


def test_the_block_links_the_api_docs_and_starts_collapsed(client):
    body = client.get(f"/?{MATRIX['transformers']}").content.decode()
    block = re.search(r'<details class="api-route"[^>]*>', body)
    assert block
    assert " open" not in block.group(0)
    assert '<a href="/api/v1/docs">API documentation</a>' in body
    assert client.get("/api/v1/docs").status_code == 200
    assert 'data-copy="api-route-curl"' in body


def test_the_block_is_translated(client):
    body = client.get(f"/de/?{MATRIX['transformers']}").content.decode()
    assert "Über die API oder die Kommandozeile nutzen" in body
    assert "curl-Befehl kopieren" in body


def test_a_recompute_gets_the_block_with_the_part_loaded_next(client):
    """The first view leaves a slot named after its inputs; the part it loads next fills that
    slot out of band (htmx swaps an hx-swap-oob element into the element of its id)."""
    fragment = client.get(f"/?{MATRIX['lora']}", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="api-route"' not in fragment
    found_slot = re.search(r'<div id="(api-route-[0-9a-f]{16})"></div>', fragment)
    found_more = re.search(r'<div id="more"[^>]* hx-get="([^"]+)"', fragment)
    assert found_slot
    assert found_more
    slot, more_url = found_slot.group(1), html.unescape(found_more.group(1))
    more = client.get(more_url, HTTP_HX_REQUEST="true").content.decode()
    oob = re.search(
        r'<div id="(api-route-[0-9a-f]{16})" hx-swap-oob="true">(.*?)</div>\s*$', more, re.S
    )
    assert oob
    assert oob.group(1) == slot
    assert 'data-testid="api-route"' in oob.group(2)
    # Other inputs, another slot: a late answer to an older edit lands nowhere.
    other = client.get(f"/?{MATRIX['lora']}&seq=1234", HTTP_HX_REQUEST="true").content.decode()
    assert slot not in other


def test_a_cached_page_never_names_another_hosts_address(client):
    """The block names the API by an absolute address; the page cache keys pages by scheme and
    host (security review, finding 14), so a forged Host header cannot reach other visitors."""
    query = MATRIX["transformers"]
    for _ in range(3):  # seen twice, then cached (views._seen_before)
        client.get(f"/?{query}", HTTP_HOST="localhost")
    body = client.get(f"/?{query}").content.decode()
    assert route_text(body, "curl").startswith("curl -s -X POST http://testserver/api/v1/estimate")
    assert "localhost" not in route_text(body, "get")


def save(client, query: str) -> str:
    response = client.post("/r/", {"query": query})
    assert response.status_code == 302
    return response["Location"]


@pytest.mark.parametrize("name", ["vllm", "llama-cpp", "full-finetune-deepspeed", "custom-shape"])
def test_the_saved_page_shows_the_same_block(client, monkeypatch, name):
    query = MATRIX[name]
    live = client.get(f"/?{query}").content.decode()
    location = save(client, query)
    saved = client.get(location)
    body = saved.content.decode()
    total = saved.context["result"].total_bytes
    assert route_text(body, "curl") == route_text(live, "curl")
    assert route_text(body, "cli") == route_text(live, "cli")
    saved_query = parse_qs(urlsplit(route_text(body, "get")).query)
    assert saved_query == parse_qs(urlsplit(route_text(live, "get")).query)
    assert "today's catalogue" in html.unescape(body)
    _head, document = heredoc(route_text(body, "curl"))
    assert post(client, json.loads(document)).json()["total_bytes"] == total
    assert run_cli(monkeypatch, route_text(body, "cli"))["total_bytes"] == total
    exported = client.get(f"{location}?format=json").json()
    assert post(client, exported["inputs"]).json()["total_bytes"] == total


def test_a_saved_result_whose_preset_changed_sends_the_saved_config(client):
    """Asking for the preset by name would give today's numbers: the body carries the config
    the snapshot was computed from."""
    query = MATRIX["transformers"]
    location = save(client, query)
    before = client.get(location).context["result"].total_bytes
    preset = ModelPreset.objects.get(slug="llama-3.1-8b")
    preset.config = {**preset.config, "num_hidden_layers": 16}
    preset.save()
    body = client.get(location).content.decode()
    _head, document = heredoc(route_text(body, "curl"))
    request = json.loads(document)
    assert request["model"]["config"]["num_hidden_layers"] == 32  # as saved
    assert post(client, request).json()["total_bytes"] == before
    assert client.get(f"/?{query}").context["result"].total_bytes < before  # today's


def test_the_markdown_has_vllms_pool_and_concurrency_as_the_page_shows_them(client):
    page = client.get(f"/?{QWEN_72B_FP8}").content.decode()
    shown = re.search(
        r"vLLM serves ([\d.]+) concurrent requests of 32,768 tokens: "
        r"its KV-cache pool holds ([\d,]+) tokens\.",
        html.unescape(page),
    )
    assert shown, "the page states the pool and the concurrency"
    concurrency, tokens = shown.group(1), shown.group(2)
    # vLLM's rule (vllm/v1/core/kv_cache_utils.py, get_max_concurrency_for_kv_cache_config):
    # blocks in the pool over the blocks one max_model_len request needs; Qwen2.5 72B is all
    # full attention, so that is tokens / 32,768 (both whole 16-token blocks).
    pool = int(tokens.replace(",", ""))
    assert pool % 16 == 0
    assert concurrency == f"{pool / 32768:.2f}"
    markdown = client.get(f"/?{QWEN_72B_FP8}&format=md").content.decode()
    assert f"vLLM serves {concurrency} concurrent requests of 32,768 tokens" in markdown
    assert f"its KV-cache pool holds {tokens} tokens." in markdown


def test_the_markdown_has_llama_cpps_layers_and_system_ram_as_the_page_shows_them(client):
    query = MATRIX["llama-cpp"]
    page = html.unescape(client.get(f"/?{query}").content.decode())
    # Qwen/Qwen3-30B-A3B config.json: num_hidden_layers 48, so 49 slots with the output layer.
    shown = re.search(r"System RAM: ([\d.]+) GiB \(24 of 49 layers on the GPU", page)
    assert shown
    markdown = client.get(f"/?{query}&format=md").content.decode()
    assert f"System RAM: {shown.group(1)} GiB (24 of 49 layers on the GPU" in markdown
    assert "- -ngl: 24" in markdown


def test_a_config_left_out_of_the_link_has_no_get_address_but_its_body(
    client, settings, llama31_8b
):
    """A long pasted config that could not be stored is not in the result's link: the GET form
    would ask for another model, so only the body (which holds the config) is offered."""
    settings.PASTED_CONFIG_RATE_PER_HOUR = 0
    text = json.dumps({**llama31_8b, "_padding": "x" * 3000})  # past MAX_LINKED_CONFIG_CHARS
    page = client.post("/", {"source": "config", "config": text, "gpu": "rtx-4090-24gb"})
    body = page.content.decode()
    assert "not stored for a short link" in body
    assert 'id="api-route-get"' not in body
    _head, document = heredoc(route_text(body, "curl"))
    request = json.loads(document)
    assert request["model"]["config"]["_padding"] == "x" * 3000
    assert post(client, request).json()["total_bytes"] == page.context["result"].total_bytes

"""What a first-time user tripped over (issue 17), through Django's test client.

Expected figures are hand calculations written out here, from published configs: Llama 3.1 8B
(meta-llama/Llama-3.1-8B config.json: hidden 4096, 32 layers, vocabulary 128,256, untied LM
head; transformers counts 8,030,261,248 parameters, tests/estimator/data/
transformers_param_counts.json) and Falcon 7B (tiiuae/falcon-7b config.json:
max_position_embeddings 2048).
"""

import json
import re
from pathlib import Path

import pytest
from django.core.cache import cache
from django.utils import translation

from calculator.result.formatting import gib, percent

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


# --- 3. the weights row of a quantized model multiplies out --------------------------------


def test_quantized_weights_formula_names_both_parts_and_multiplies_out(client):
    # Llama 3.1 8B: embeddings 128,256 × 4,096 = 525,336,576, the untied LM head the same;
    # RMSNorms 2 per layer × 32 layers × 4,096 + the final 4,096 = 266,240. The rest are the
    # linear layers: 8,030,261,248 − 2 × 525,336,576 − 266,240 = 6,979,321,856.
    linear, kept = 6_979_321_856, 2 * 525_336_576 + 266_240
    expected_bytes = linear // 2 + kept * 2  # INT4 packs ½ byte; the rest stays in BF16
    assert expected_bytes == 5_591_539_712
    body = text(client.get("/?model=Llama 3.1 8B&precision=int4&seq=1024"))
    assert "6,979,321,856 parameters of linear layers × ½ bytes" in body
    assert (
        "1,050,939,392 parameters of embeddings, LM head and norms, kept in BF16, × 2 bytes" in body
    )
    # The figure beside the formula is that product (5.2075… GiB, shown rounded).
    row = re.search(r"Weights ([\d.]+) [\d.]+% How it is computed", body)
    assert row is not None
    assert row.group(1) == "5.21"


# --- 4. advice with judgement ---------------------------------------------------------------


def test_fourteen_b_on_twelve_gb_suggests_a_combination_and_prices_two_bit(client):
    body = text(client.get("/?model=qwen2.5-14b&gpu=rtx-3060-12gb&precision=bf16"))
    assert "Does not fit" in body
    assert "Best combination that fits: INT4 weights + 8-bit KV cache" in body
    assert "large loss: 2-bit weights usually break the model" in body  # the INT2 lever
    assert "arXiv:2404.14047" in body  # the source of the quality statement
    assert "Or a smaller model of the same family: Qwen2.5 7B · INT8" in body


def test_context_beyond_the_trained_window_is_flagged(client):
    body = text(client.get("/?model=falcon-7b&seq=4096"))
    assert "beyond the 2,048-token context this model was trained for" in body
    inside = text(client.get("/?model=falcon-7b&seq=2048"))
    assert "beyond the" not in inside


# --- 5. a memory amount instead of a catalogue card -----------------------------------------


def test_calculator_takes_a_memory_amount(client):
    body = text(client.get("/?model=qwen2-7B&vram=12"))
    # 12 GB as marketed (GiB, as GPU vendors count) × 98.5% usable = 11.82 GiB.
    assert f"{12 * 0.985:.2f}" == "11.82"
    assert "Counting the 11.82 GiB the card exposes to programs (marketed as 12 GB)" in body
    assert "your 12 GB card" in body
    assert "Must be at least 1." in text(client.get("/?model=qwen2-7B&vram=0.5"))


# --- 6. /fits/ carries its GPU and its headline agrees with its examples --------------------


def test_fits_links_carry_the_gpu_or_the_memory_amount(client):
    page = client.get("/fits/?gpu=rtx-4090-24gb").content.decode()
    own = page.split('id="own-title"')[1].split("</section>")[0]
    links = re.findall(r'href="/\?([^"]+)"', own)
    assert links
    assert all("gpu=rtx-4090-24gb" in link for link in links)
    page = client.get("/fits/?gb=12").content.decode()
    own = page.split('id="own-title"')[1].split("</section>")[0]
    links = re.findall(r'href="/\?([^"]+)"', own)
    assert links
    assert all("vram=12" in link for link in links)


def test_fits_list_puts_two_bit_fits_last(client):
    page = client.get("/fits/?gb=12").content.decode()
    own = page.split('id="own-title"')[1].split("</section>")[0]
    precisions = re.findall(r"</a></th>\s*<td[^>]*>([^<]+)", own)
    first_int2 = next((i for i, p in enumerate(precisions) if "INT2" in p), len(precisions))
    assert all("INT2" in p for p in precisions[first_int2:])
    assert precisions
    assert "INT2" not in precisions[0]


def test_fits_examples_above_the_headline_are_marked(client):
    from calculator.catalogue.selectors import preset_list
    from calculator.result import reverse

    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1)
    table = reverse.tier_table(workload, list(preset_list()))
    above = 0
    for row in table:
        for cell in row.cells:
            for example in cell.examples:
                bigger = example.preset.params_total > cell.honest_billion * 1e9
                assert example.above_headline == bigger
                above += bigger
    assert above  # e.g. gpt-oss-20b in the 16 GB INT4 cell: fewer KV heads, sliding windows
    body = text(client.get("/fits/"))
    assert "The bold figure is the largest dense model of the reference shape" in body


# --- 7. the saved-link limit: a whole translated page, per client behind proxies ------------


def test_rate_limited_save_returns_the_page_with_the_result(client, settings):
    settings.SAVED_RESULT_RATE_PER_HOUR = 1
    query = "model=qwen2-7B&seq=8192"
    assert client.post("/es/r/", {"query": query}).status_code == 302
    response = client.post("/es/r/", {"query": query})
    assert response.status_code == 429
    assert response["Retry-After"] == "3600"
    body = text(response)
    assert '<html lang="es"' in response.content.decode()
    assert "GiB" in body
    assert "Qwen2 7B" in body
    assert 'class="notice"' in response.content.decode()


def test_rate_limit_counts_the_address_the_trusted_proxy_saw(client, settings):
    settings.SAVED_RESULT_RATE_PER_HOUR = 1
    settings.PROXY_COUNT = 1
    query = "model=qwen2-7B"
    # Two visitors behind one reverse proxy (same REMOTE_ADDR) have their own limits.
    for visitor in ("203.0.113.5", "198.51.100.7"):
        response = client.post("/r/", {"query": query}, HTTP_X_FORWARDED_FOR=visitor)
        assert response.status_code == 302
    # A visitor who writes an address of their own in the header is still counted by the
    # entry the proxy appended (the last one).
    spoofed = client.post("/r/", {"query": query}, HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.5")
    assert spoofed.status_code == 429
    cache.clear()


# --- 8. snapshots and exports say what was computed -----------------------------------------


def test_snapshot_shows_every_input_and_offers_exports(client):
    query = (
        "model=Llama 3.1 8B&mode=lora&lora_rank=64&lora_targets=all-linear&ckpt=on&seq=2048&batch=2"
    )
    location = client.post("/r/", {"query": query})["Location"]
    body = text(client.get(location))
    for label, value in [
        ("Mode", "LoRA"),
        ("LoRA rank", "64"),
        ("LoRA target modules", "All linear layers"),
        ("Gradient checkpointing", "yes"),
        ("Sequence length (tokens)", "2,048"),
        ("Batch size", "2"),
    ]:
        assert f"{label} {value}" in body
    exported = client.get(location + "?format=json").json()
    assert exported["model"]["name"] == "Llama 3.1 8B"
    assert exported["inputs"]["lora"]["rank"] == 64
    assert exported["inputs"]["seq_len"] == 2048
    markdown = client.get(location + "?format=md").content.decode()
    assert "LoRA rank: 64" in markdown


def test_json_export_and_api_name_the_model_and_echo_the_inputs(client):
    exported = client.get("/?model=qwen2-7B&seq=8192&batch=3&format=json").json()
    assert exported["model"]["name"] == "Qwen2 7B"
    assert exported["model"]["hf_repo"] == "Qwen/Qwen2-7B"
    assert exported["inputs"]["seq_len"] == 8192
    assert exported["inputs"]["batch_size"] == 3
    api = client.post(
        "/api/v1/estimate",
        {"model": {"preset": "qwen2-7b"}, "seq_len": 8192, "batch_size": 3},
        content_type="application/json",
    ).json()
    assert api["model"]["name"] == "Qwen2 7B"
    assert api["inputs"]["seq_len"] == 8192
    assert api["total_bytes"] == exported["total_bytes"]


def test_page_and_exports_round_the_same_way():
    # 181.699 GiB: cutting decimals off gives 181.69, rounding gives 181.70 (what the Markdown
    # export's f"{x:.2f}" always printed).
    assert gib(int(181.699 * GIB)) == "181.70"
    assert gib(int(0.125 * GIB)) == "0.13"  # half-up, not banker's rounding


def test_markdown_total_matches_the_page(client):
    page = text(client.get("/?model=qwen2-7B&seq=8192"))
    markdown = client.get("/?model=qwen2-7B&seq=8192&format=md").content.decode()
    match = re.search(r"### Qwen2 7B: ([\d.,]+) GiB", markdown)
    assert match is not None
    total = match.group(1)
    assert f"{total} GiB total" in page


# --- 9. every visible string translated, numbers in the locale's format ---------------------


def test_spanish_markdown_export_is_spanish(client):
    markdown = client.get("/es/?model=qwen2-7B&mode=lora&format=md").content.decode()
    for english in ("Component |", "Share", "Peak", "Mode:", "Batch size", "fits", "per GPU"):
        assert english not in markdown, english
    assert "Componente" in markdown


def test_assumption_sources_are_translated(client):
    # The CUDA-context note is prose; in German it is German.
    body = text(client.get("/de/?model=qwen2-7B"))
    assert "Published measurements" not in body
    assert "no GPU was available" not in body


def test_one_number_format_per_page(client):
    body = text(client.get("/fr/?model=qwen2.5-14b&gpu=rtx-3060-12gb"))
    assert not re.search(r"\d,\d{3}\b", body), "English grouping on a French page"
    assert not re.search(r"\b\d{5,}\s+tokens\b", body), "ungrouped token counts"
    assert not re.search(r"\d%", body.replace("\u202f%", " %")), "French puts a space before %"
    with translation.override("en"):
        assert percent(30.6, 1) == "30.6%"
    with translation.override("es"):
        assert percent(30.6, 1) == "30,6\u202f%"  # RAE: a space before the sign


def test_every_recompute_has_a_slot_for_every_field_message(client):
    full = client.get("/").content.decode()
    partial = client.get("/?batch=-1", HTTP_HX_REQUEST="true").content.decode()
    slots = re.findall(r'id="(errors_\w+)"[^>]*hx-swap-oob', partial)
    assert slots
    for slot in slots:
        assert f'id="{slot}"' in full, f"{slot} has no target on the page (htmx oobErrorNoTarget)"


# --- 2. pasted configs travel in the body, any length ---------------------------------------


def _long_config() -> str:
    """Falcon 7B's published config, padded with indentation to 30,000+ characters (what a
    long pasted config looks like to a URL: too long for gunicorn's 8,190-byte request line)."""
    config = json.loads((ROOT / "validation" / "configs" / "falcon-7b.json").read_text())
    text = json.dumps(config, indent=1)
    padding = 30_000 - len(text)
    return text.replace("{", "{" + " " * padding, 1)


def test_a_30000_character_config_is_posted_and_linked_by_id(client):
    config = _long_config()
    assert len(config) >= 30_000
    response = client.post(
        "/", {"source": "config", "config": config, "seq": "2048"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    body = text(response)
    assert "6.92B parameters" in body  # Falcon 7B: 6,921,720,704 (transformers count)
    link = response["HX-Replace-Url"]
    assert "cfg=" in link
    assert len(link) < 300
    reopened = text(client.get(link))
    match = re.search(r"([\d.]+) GiB total", body)
    assert match is not None
    total = match.group(1)
    assert f"{total} GiB total" in reopened


@pytest.mark.parametrize("config_id", ["doesnotexist", "A" * 22, "\x00", "a" * 500])
def test_a_link_to_a_pruned_or_bad_config_id_says_so(client, config_id):
    response = client.get("/", {"source": "config", "cfg": config_id})
    assert response.status_code == 200
    assert "no longer stored on the server" in text(response)


def test_an_invalid_pasted_config_keeps_the_previous_result_and_url(client):
    response = client.post("/", {"source": "config", "config": "{"}, HTTP_HX_REQUEST="true")
    assert response["HX-Reswap"] == "none"
    assert response["HX-Replace-Url"] == "false"
    assert "This is not valid JSON." in text(response)


def test_fits_page_formats_its_numbers_for_the_locale(client):
    body = text(client.get("/de/fits/?seq=32768&gb=12"))
    assert "32.768" in body  # German grouping
    assert "32768" not in body


def test_images_per_request_on_the_page(client):
    # Qwen3-VL 8B (config.json: vision patch_size 16, spatial_merge_size 2): a 1024 × 1024
    # image is (1024 / 16)² = 4,096 patches, merged 2 × 2 into 1,024 tokens; two images 2,048.
    assert (1024 // 16) ** 2 // (2 * 2) * 2 == 2048
    body = text(client.get("/?model=qwen3-vl-8b&images=2"))
    assert "Images add 2,048 tokens to each sequence." in body
    none = text(client.get("/?model=qwen3-vl-8b&images=0"))
    assert "Images add" not in none
    text_only = text(client.get("/?model=qwen2-7B&images=3"))
    assert "Images add" not in text_only


@pytest.mark.parametrize("language", ["en", "es", "pt-br", "zh-hans", "fr", "de", "ja", "ko"])
def test_fast_number_format_matches_djangos(language):
    """The page's formatter equals Django's own number_format (locale separators, grouping) on
    the half-up rounded value, for values across the range the page shows."""
    from decimal import ROUND_HALF_UP, Decimal

    from django.utils.formats import number_format

    from calculator.inputs.l10n import decimal

    values = [0.0, 0.005, 0.125, 999.995, 1234.5, 181.699, 4096, 1e6 + 0.5, 123456789.987]
    with translation.override(language):
        for value in values:
            for places in (0, 1, 2):
                step = Decimal(1).scaleb(-places)
                rounded = Decimal(repr(value)).quantize(step, rounding=ROUND_HALF_UP)
                expected = number_format(rounded, places, use_l10n=True, force_grouping=True)
                assert decimal(value, places) == expected


@pytest.mark.parametrize("language", ["en", "fr", "de", "zh-hans"])
def test_whole_numbers_are_formatted_exactly_however_large(language):
    """Parameter and byte counts go through the integer path: exact beyond float's 2⁵³, and
    grouped as Django groups them. 456,089,655,296 is MiniMax-M1's parameter count."""
    from django.utils.formats import number_format

    from calculator.inputs.l10n import decimal

    with translation.override(language):
        for value in (0, 7, 4096, 456_089_655_296, 2**60 + 1):
            assert decimal(value, 0) == number_format(value, 0, use_l10n=True, force_grouping=True)
    assert decimal(2**60 + 1, 0).replace(",", "") == "1152921504606846977"

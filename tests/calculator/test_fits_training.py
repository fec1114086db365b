"""'What fits in my VRAM' for training (issue 25, misleads 7): the page takes the training stack
and gradient checkpointing, checkpointing is on by default for LoRA and QLoRA (as PEFT's
prepare_model_for_kbit_training(use_gradient_checkpointing=True), the QLoRA paper's qlora.py
--gradient_checkpointing True, Unsloth and torchtune's LoRA recipes run them), and every link
into the calculator carries both, so it shows the same figure.

Before: 8 GB for QLoRA listed only 124M-160M models (the walkthrough, persona 5), since every
activation of a 4,096-token step was kept.
"""

import re
from urllib.parse import parse_qs

import pytest
from django.core.cache import cache

pytestmark = pytest.mark.django_db
LAPTOP_8GB = "/fits/?mode=qlora&gpu=rtx-4060-laptop-8gb"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def calculator_links(response) -> list[str]:
    own = response.content.decode().split('id="own-title"')[1].split("</section>")[0]
    return [href.replace("&amp;", "&") for href in re.findall(r'href="/\?([^"]+)"', own)]


def test_qlora_on_8_gb_checkpoints_by_default_and_lists_billion_parameter_models(client):
    response = client.get(LAPTOP_8GB)
    form = response.context["form"]
    assert form.cleaned_data["ckpt"] == "on"
    assert form.cleaned_data["stack"] == "hf_trainer"
    models = response.context["own"]["models"]
    assert max(fit.preset.params_total for fit in models) > 3e9  # was 160M at most
    body = response.content.decode()
    assert '<option value="on" selected>' in body  # the form shows the default it used
    assert "gradient checkpointing on" in body


def test_switching_checkpointing_off_gives_the_old_list(client):
    response = client.get(LAPTOP_8GB + "&ckpt=off")
    models = response.context["own"]["models"]
    assert models
    assert max(fit.preset.params_total for fit in models) < 0.2e9


def test_the_links_carry_the_stack_and_checkpointing_and_give_the_same_total(client):
    response = client.get(LAPTOP_8GB + "&stack=unsloth")
    fit = response.context["own"]["models"][0]
    link = next(
        q for q in calculator_links(response) if fit.preset.display_name in parse_qs(q)["model"]
    )
    query = parse_qs(link)
    assert query["stack"] == ["unsloth"]
    assert query["ckpt"] == ["on"]
    assert query["act_ckpt"] == ["full"]
    page = client.get("/?" + link + "&format=json").json()
    assert page["total_bytes"] == fit.total_bytes
    assert page["verdict"]["fits"] is True


def test_a_tier_example_opens_with_the_same_training_switches(client):
    response = client.get("/fits/?mode=lora&seq=2048")
    cell = response.context["table"][0].cells[1]
    example = cell.examples[0]
    from calculator.result.reverse import calculator_query

    query = calculator_query(response.context["workload"], example.preset, cell.precision)
    assert "act_ckpt=full" in query
    page = client.get("/?" + query + "&format=json").json()
    assert page["total_bytes"] == example.total_bytes


def test_inference_reads_neither_switch(client):
    # Not part of the page's key either: the same page as without them.
    response = client.get("/fits/?stack=unsloth&ckpt=off")
    assert response.context["form"].cleaned_data["stack"] is None
    assert response.context["form"].cleaned_data["ckpt"] is None
    assert "gradient checkpointing" not in response.content.decode().split("tiers-title")[1]

"""The "Best combination that fits" of a training run ranks its changes by what they cost the
person training (issue 25, misleads 6): gradient checkpointing (compute only; Chen et al. 2016,
arXiv:1604.06174, recomputes the activations it frees) and the training stack's memory switches
before quantized weights or a shorter context; QLoRA's weights are 4-bit by definition.

Figures are hand calculations from published configs: Llama 3.1 8B (meta-llama/Llama-3.1-8B
config.json: 8,030,261,248 parameters as transformers counts them, vocabulary 128,256) and
Mistral 7B v0.1; and the walkthrough's cases (shared/research/walkthrough-turn3.md, persona 3).
"""

import re

import pytest
from django.core.cache import cache

pytestmark = pytest.mark.django_db
GIB = 1 << 30


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def best_line(response) -> str:
    body = text(response)
    start = body.index("Best combination that fits:")
    return body[start : body.index("Longest context:", start)]


def follow(client, response):
    link = re.search(
        r'data-testid="best-combination">.*?<a href="\?([^"]+)"', response.content.decode(), re.S
    )
    assert link is not None
    return client.get("/?" + link.group(1).replace("&amp;", "&"))


LORA_ZERO3 = (
    "/?model=Llama+3.1+8B&mode=lora&stack=deepspeed&gpu=a100-sxm-40gb&gpus=8&zero=3"
    "&batch=4&seq=4096"
)


def test_lora_that_fits_with_checkpointing_is_not_told_to_quantize(client):
    # The walkthrough: INT4 weights and 1,288 tokens were offered while checkpointing alone
    # fits at the full 4,096 tokens (34.50 GiB on a 40 GB card).
    response = client.get(LORA_ZERO3)
    levers = response.context["levers"]
    best = levers["combination"]
    assert [switch.key for switch in best.switches] == ["checkpointing"]
    assert best.precision is None
    assert best.seq_len == 4096
    assert not best.shortened
    assert best.total_bytes == levers["checkpointing_bytes"]  # the lever just below it
    line = best_line(response)
    assert "gradient checkpointing · 4,096 tokens" in line
    assert "INT4" not in line
    assert "no quality loss" in line
    followed = follow(client, response)
    assert followed.context["verdict"].fits is True
    assert followed.context["result"].total_bytes == best.total_bytes


def test_qlora_is_never_offered_a_weight_format(client):
    # QLoRA keeps its base weights in 4-bit NF4 by definition (Dettmers et al. 2023,
    # arXiv:2305.14314 §3): "BF16 weights · 2,106 tokens" was offered, while checkpointing
    # fits Mistral 7B at 4,096 tokens on a 24 GB card.
    response = client.get("/?model=Mistral+7B+v0.1&mode=qlora&gpu=rtx-4090-24gb&seq=4096")
    best = response.context["levers"]["combination"]
    assert best.precision is None
    assert [switch.key for switch in best.switches] == ["checkpointing"]
    assert best.seq_len == 4096
    line = best_line(response)
    assert "weights" not in line
    assert "BF16" not in line


def test_full_fine_tuning_gets_its_combination_too(client):
    # Full fine-tuning had none (146.72 GiB per GPU without checkpointing on 8 × A100 40 GB
    # under ZeRO-3, the walkthrough's table). With ZeRO's fp32 master weights and states
    # counted on the GPU (12 bytes per parameter ÷ 8, ZeRO §5.1) checkpointing alone no longer
    # fits 40 GB, so the next switch that costs no quality follows it; never quantized weights
    # (full fine-tuning trains them) nor a shorter context.
    response = client.get(LORA_ZERO3.replace("mode=lora", "mode=full_finetune"))
    best = response.context["levers"]["combination"]
    keys = [switch.key for switch in best.switches]
    assert keys[0] == "checkpointing"
    assert best.precision is None
    assert best.seq_len == 4096
    assert best.total_bytes <= response.context["gpu"].usable_bytes


def test_the_stacks_switches_come_before_quantized_weights(client):
    # LoRA of Llama 3.1 8B at 16,384 tokens on a 24 GB card: with checkpointing it is still
    # over (the FP32 logits alone are 16,384 × 128,256 × 4 B = 7.8 GiB). The loss computed
    # without full logits and the checkpointed inputs in system RAM (TRL's activation
    # offloading) fit it at the full context, so no weight format and no shorter context.
    assert round(16_384 * 128_256 * 4 / GIB, 2) == 7.83
    response = client.get("/?model=Llama+3.1+8B&mode=lora&gpu=rtx-4090-24gb&seq=16384")
    levers = response.context["levers"]
    usable = response.context["gpu"].usable_bytes
    assert levers["checkpointing_bytes"] > usable
    best = levers["combination"]
    assert best.precision is None
    assert best.seq_len == 16384
    keys = [switch.key for switch in best.switches]
    assert "checkpointing" in keys
    assert "loss" in keys
    assert best.total_bytes <= usable
    assert follow(client, response).context["verdict"].fits is True


def test_an_offload_is_offered_only_within_the_system_ram_given(client):
    # Full fine-tuning of Llama 3.1 8B on one 24 GB card: only with the optimizer in system
    # RAM (DeepSpeed's offload_optimizer). ZeRO-Offload keeps the fp32 master weights (4 B),
    # both Adam moments (8 B) and the 16-bit gradients (2 B) there: 8,030,261,248 × 14 B =
    # 112 GB, which 32 GB of RAM cannot hold and 256 GB can.
    assert round(8_030_261_248 * 14 / 1e9, 1) == 112.4
    query = (
        "/?model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&gpu=rtx-4090-24gb&batch=1&seq=2048"
    )
    roomy = client.get(query + "&ram=256").context["levers"]["combination"]
    assert "optimizer_offload" in [switch.key for switch in roomy.switches]
    tight = client.get(query + "&ram=32").context["levers"].get("combination")
    assert tight is None or "optimizer_offload" not in [s.key for s in tight.switches]


def test_qlora_levers_never_offer_a_weight_format(client):
    # Mistral 7B QLoRA with checkpointing fits a 24 GB card; "Most precise weights that fit:
    # FP32" was offered although QLoRA's base weights are NF4 whatever the precision field says.
    response = client.get(
        "/?model=Mistral+7B+v0.1&mode=qlora&gpu=rtx-4090-24gb&seq=4096&ckpt=on&act_ckpt=full"
    )
    assert response.context["levers"]["precision"] is None
    assert "Most precise weights that fit" not in text(response)
    lora = client.get(
        "/?model=Mistral+7B+v0.1&mode=lora&gpu=rtx-4090-24gb&seq=1024&ckpt=on&act_ckpt=full"
    )
    assert "Most precise weights that fit" in text(lora)


def test_qlora_smaller_model_is_not_labelled_with_a_weight_format(client):
    # Qwen2.5 14B QLoRA does not fit 8 GB; the smaller model of its line was offered as
    # "· BF16", a format QLoRA does not load its base weights in.
    response = client.get(
        "/?model=Qwen2.5+14B&mode=qlora&gpu=rtx-4060-laptop-8gb&seq=2048&ckpt=on&act_ckpt=full"
    )
    smaller = response.context["smaller_model"]
    assert smaller is not None
    assert smaller["precision"] is None
    body = text(response)
    line = body[body.index("Or a smaller model of the same family:") :][:120]
    assert smaller["preset"].display_name in line
    assert "BF16" not in line


def test_lora_in_fp32_is_offered_16_bit_weights_first(client):
    # FP32 weights of Llama 3.1 8B are 8,030,261,248 × 4 B = 32.1 GB, more than a 24 GB card;
    # BF16 halves them at no quality cost, before any 8- or 4-bit format.
    assert round(8_030_261_248 * 4 / 1e9, 1) == 32.1
    response = client.get(
        "/?model=Llama+3.1+8B&mode=lora&precision=fp32&gpu=rtx-4090-24gb&seq=1024"
        "&ckpt=on&act_ckpt=full"
    )
    best = response.context["levers"]["combination"]
    assert best.precision == "bf16"
    assert best.switches == ()
    assert best.seq_len == 1024

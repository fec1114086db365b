"""Training stacks (issue 14) on the page, the permalink export and the API.

Hand calculations from meta-llama/Llama-3.1-8B's config.json (8,030,261,248 parameters,
transformers count): ZeRO-Offload keeps the FP32 master weights and both Adam moments on the host
(Ren et al. 2021, arXiv:2101.06840 §4.1: 12 bytes per parameter) plus the gradients it moves there.
"""

import json
import re

import pytest
from django.core.cache import cache

pytestmark = pytest.mark.django_db

LLAMA_8B_PARAMS = 8_030_261_248


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


FULL_FT = "/?model=Llama+3.1+8B&mode=full_finetune&gpu=rtx-4090-24gb&seq=2048"


def test_the_default_stack_is_the_hf_trainer_with_fused_adamw(client):
    response = client.get(FULL_FT)
    switches = response.context["result"].switches
    assert switches.training_stack == "hf_trainer"
    assert switches.optimizer_impl == "fused"
    assert "As Hugging Face Trainer" in text(response)


def test_foreach_adamw_keeps_more_during_the_step(client):
    fused = client.get(FULL_FT + "&ckpt=on").context["result"]
    foreach = client.get(FULL_FT + "&ckpt=on&opt_impl=foreach").context["result"]
    # foreach materialises one more state-sized tensor in the step (torch/optim/adam.py): in
    # pure BF16 training Adam's moments are BF16, so one copy is 2 bytes per trained parameter;
    # with checkpointing the step is the peak, so the peak grows by about that much.
    one_state_copy = 2 * LLAMA_8B_PARAMS
    difference = foreach.peak_allocated_bytes - fused.peak_allocated_bytes
    assert 0.9 * one_state_copy <= difference <= 1.1 * one_state_copy
    assert "optimizer: foreach (multi-tensor)*" in text(client.get(FULL_FT + "&opt_impl=foreach"))


def test_optimizer_offload_moves_states_to_system_ram_and_checks_it(client):
    response = client.get(FULL_FT + "&stack=deepspeed&opt_offload=on&ram=64")
    result = response.context["result"]
    # At least the 12 bytes per parameter of ZeRO-Offload's host copy (master + m + v).
    assert result.host_bytes >= 12 * LLAMA_8B_PARAMS
    host = response.context["host_verdict"]
    assert host["fits"] is False  # > 96 GB against 64 GB
    assert "of system RAM needed: more than your 64" in text(response)
    roomy = client.get(FULL_FT + "&stack=deepspeed&opt_offload=on&ram=256")
    assert roomy.context["host_verdict"]["fits"] is True


def test_a_gpu_count_the_parallel_layout_cannot_split_is_a_field_message(client):
    response = client.get(
        "/?model=Llama+3.1+70B&mode=pretrain&gpus=16&tp=4&pp=3", HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert "multiple of tensor × pipeline × context parallel (12)" in response.content.decode()
    split = client.get("/?model=Llama+3.1+8B&mode=full_finetune&gpus=2&cp=2&seq=4095")
    assert "Context parallel must divide the sequence length" in text(split)


def test_pipeline_parallel_names_the_stage_that_peaks(client):
    response = client.get(
        "/?model=Llama+3.1+70B&mode=pretrain&stack=megatron&gpus=16&tp=4&pp=4&gpu=h100-sxm-80gb"
    )
    result = response.context["result"]
    # 1F1B: the first stage keeps the most micro-batches in flight (Narayanan et al. 2021 §2.2.1).
    assert result.peak_stage == 0
    assert "the peak is on pipeline stage 0" in text(response)


def test_stack_choices_reach_the_api_and_the_export(client):
    page = json.loads(client.get(FULL_FT + "&stack=unsloth&format=json").content)
    assert page["inputs"]["training_stack"] == "unsloth"
    assert page["switches"]["activation_offloading"] is True  # Unsloth's offloaded checkpoints
    body = {
        "model": {"preset": "llama-3.1-8b"},
        "mode": "full_finetune",
        "training_stack": "deepspeed",
        "optimizer_offload": True,
        "ram_gb": 64,
    }
    api = client.post("/api/v1/estimate", json.dumps(body), content_type="application/json")
    assert api.status_code == 200, api.content
    assert api.json()["host_verdict"]["fits"] is False
    assert api.json()["host_bytes"] >= 12 * LLAMA_8B_PARAMS


ZERO3_A100 = (
    "/?model=Llama+3.1+8B&mode=full_finetune&stack=deepspeed&gpu=a100-sxm-40gb&gpus=8&zero=3"
    "&batch=4&seq=4096&ckpt=on&ram=512"
)


def test_deepspeed_zero3_counts_its_fp32_optimizer_on_the_gpu_and_in_ram_alike(client):
    # Walkthrough turn 3, persona 3. ZeRO §5.1 (arXiv:1910.02054): fp32 master + Adam moments are
    # 12 bytes per parameter over the 8 ranks, 12 × 8,030,261,248 / 8 / 2**30 = 11.22 GiB per GPU,
    # on the GPU as in RAM. DeepSpeed's memory docs (ZeRO-3, offload_optimizer, zero.Init) put
    # 16 × params on the machine's CPU (fp32 params, grads, momentum, variance): 16 × P / 8 /
    # 2**30 = 14.96 GiB per GPU, 119.66 GiB for the 8 GPUs of the machine.
    on_gpu = client.get(ZERO3_A100).context["result"]
    states = on_gpu.breakdown.master_weights + on_gpu.breakdown.optimizer_states
    assert states == pytest.approx(12 * LLAMA_8B_PARAMS / 8, rel=1e-6)
    offloaded = client.get(ZERO3_A100 + "&opt_offload=on")
    host = offloaded.context["result"].host_breakdown
    assert host.master_weights + host.optimizer_states == states
    assert "System RAM: 14.96 GiB per GPU" in text(offloaded)
    assert "119.66 GiB for the 8 GPU(s) of one machine" in text(offloaded)
    # Per GPU, as the GPU breakdown showed them: 8 × P / 8 and 4 × P / 8 bytes, in GiB.
    assert "Optimizer states 7.48 GiB, FP32 master weights 3.74 GiB" in text(offloaded)

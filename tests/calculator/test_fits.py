"""'What fits in my VRAM': cells against hand calculations, naive ≥ honest, examples really fit."""

import pytest

from calculator.catalogue.models import ModelPreset
from calculator.estimator import estimate
from calculator.result import reverse
from calculator.web.views import form_data  # noqa: F401  (the calculator's permalink parser)

pytestmark = pytest.mark.django_db
GIB = 1 << 30


def honest_budget_for_peak(gb: int) -> float:
    """Usable bytes of a tier, minus the 1 GiB CUDA context, divided by the 5% allocator reserve
    of inference (the estimator's documented defaults)."""
    usable = gb * GIB * 0.985
    return (usable - GIB) / 1.05


def test_80gb_fp16_cell_by_hand():
    # Hand calculation for a ~39B custom model with 8 KV heads at 4096 tokens, batch 1, BF16 KV
    # cache: depth from params ≈ 12·L·h² with h ≈ 128·L: L = round((39e9 / 196608)^(1/3)) = 58;
    # width 128 × 58 = 7424 rounded to whole 128-wide heads per 8-head KV group (steps of
    # 1024) = 7168, so 56 heads of 128.
    # KV cache: 2 × 58 layers × 8 heads × 128 × 2 bytes × 4096 tokens = 973,078,528 B.
    # MLP width: the tensors outside the MLP are 2 × 32000 × 7168 (embedding, LM head)
    # + 58 × (2 × 7168² + 2 × 7168 × 1024 + 2 × 7168) + 7168 = 7,271,140,352; each MLP column
    # adds 58 × 3 × 7168 = 1,247,232, so ~38.9B needs (38.9e9 − 7.27e9) / 1,247,232 / 256
    # = 99.1 → 99 steps of 256 = 25344 columns.
    # Working set of one layer: 3 × 4096 × 25344 × 2 B = 622,854,144 B, plus the residual
    # stream and normalised input (2 + 2) × 7168 × 4096 = 117,440,512 B.
    # Logits of the last position: 32000 × 2 B = 64,000 B.
    budget = honest_budget_for_peak(80)
    weights = budget - 973_078_528 - 622_854_144 - 117_440_512 - 64_000
    expected_billion = weights / 2 / 1e9  # 2 bytes per parameter at FP16/BF16
    assert expected_billion == pytest.approx(38.92, abs=0.01)
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1)
    honest = reverse.largest_params_billion(workload, "bf16", reverse.tier_usable_bytes(80))
    assert honest == pytest.approx(expected_billion, rel=0.01)


def test_16gb_fp16_cell_by_hand():
    # ~7.1B: L = round((7.1e9 / 196608)^(1/3)) = 33, width 128 × 33 = 4224 in steps of 1024
    # = 4096, 32 heads of 128. KV: 2 × 33 × 8 × 128 × 2 B × 4096 = 553,648,128 B. MLP width:
    # outside the MLP 2 × 32000 × 4096 + 33 × (2 × 4096² + 2 × 4096 × 1024 + 2 × 4096) + 4096
    # = 1,646,538,752; (7.07e9 − 1.65e9) / (33 × 3 × 4096) / 256 = 52.2 → 13312 columns:
    # 3 × 4096 × 13312 × 2 = 327,155,712 B; stream 4 × 4096 × 4096 = 67,108,864 B; logits
    # 64,000 B.
    weights = honest_budget_for_peak(16) - 553_648_128 - 327_155_712 - 67_108_864 - 64_000
    expected_billion = weights / 2 / 1e9
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1)
    honest = reverse.largest_params_billion(workload, "bf16", reverse.tier_usable_bytes(16))
    assert honest == pytest.approx(expected_billion, rel=0.01)
    # The naive table's claim, 16 GB / 2 bytes = 8B, leaves no room for a 4k context.
    assert honest < 8.0


@pytest.mark.parametrize("mode", ["inference", "lora", "qlora", "full_finetune"])
def test_naive_is_never_below_honest_and_examples_really_fit(mode):
    workload = reverse.Workload(mode=mode, seq_len=2048, batch_size=1)
    presets = list(ModelPreset.objects.filter(active=True))
    for row in reverse.tier_table(workload, presets):
        for cell in row.cells:
            assert cell.naive_billion >= cell.honest_billion, (row.gb, cell.precision)
            for example in cell.examples:
                # Opened in the calculator, the same settings give the same total, which fits.
                request = workload.request({"config": example.preset.config}, cell.precision)
                assert estimate(request).total_bytes <= row.usable_bytes


def test_examples_open_in_the_calculator_with_the_same_numbers(client):
    workload = reverse.Workload(mode="inference", seq_len=4096, batch_size=1)
    presets = list(ModelPreset.objects.filter(active=True))
    row = reverse.tier_table(workload, presets)[1]  # 24 GB
    cell = row.cells[1]  # FP16/BF16
    example = cell.examples[0]
    query = reverse.calculator_query(workload, example.preset, cell.precision)
    page = client.get("/?" + query + "&format=json").json()
    assert page["total_bytes"] == example.total_bytes <= row.usable_bytes


def test_fits_page_renders_the_tier_table(client):
    body = client.get("/fits/?seq=8192").content.decode()
    assert body.count("<td>") == 12 * 5  # 12 memory tiers × 5 precisions


def test_fits_page_lists_models_for_your_gpu(client):
    response = client.get("/fits/?gpu=rtx-4090-24gb&seq=8192")
    body = response.content.decode()
    assert response.status_code == 200
    assert "Catalogue models that fit on 1 × NVIDIA GeForce RTX 4090" in body
    assert "Llama 3.1 8B" in body


def test_fits_page_bad_input_gets_a_message(client):
    response = client.get("/fits/?seq=-1&gb=abc")
    assert response.status_code == 200
    assert "Must be at least 1." in response.content.decode()


def test_a_llama_cpp_context_past_its_limit_is_a_message_on_the_batch(client):
    # Finding 12: -c = 1,048,576 × 10 = 10,485,760 tokens, past llama.cpp's bound of
    # 10,000,000 here (LlamaCppOptions.n_ctx), was a 500.
    response = client.get("/fits/", {"runtime": "llama_cpp", "seq": 1_048_576, "batch": 10})
    assert response.status_code == 200
    body = response.content.decode()
    assert "at most 10,000,000" in body
    assert 'id="errors_batch"' in body


def test_a_model_with_a_ten_million_token_window_gets_a_longest_context_within_bounds(client):
    # Finding 12: Llama 4 Scout's window (max_position_embeddings 10,485,760) made the
    # longest-context probe ask for 10,240,000 tokens, past the request's 10,000,000.
    scout = ModelPreset.objects.filter(max_context__gt=10_000_000).first()
    assert scout is not None
    response = client.get("/fits/", {"gb": 100_000, "count": 1024})
    assert response.status_code == 200
    assert scout.display_name in response.content.decode()

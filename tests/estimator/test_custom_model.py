"""A custom model given only by its size: the shape the estimator fills in has tensors that add up
to the stated size under every runtime (hand calculations below; the depth and width rules are
``architecture_from_custom``'s documented ones: L from 12·L·h² with h ≈ 128·L, the width in
whole 128-wide heads per KV group and 256-element blocks, the MLP width in steps of 256)."""

import pytest

from calculator.estimator import CustomModel, EstimateRequest, estimate, resolve_architecture
from calculator.estimator.runtimes.llama_cpp import gguf_tensors


def test_70b_with_8_kv_heads_by_hand():
    # L = round((70e9 / 196608)^(1/3)) = round(70.87) = 71; width 128 × 71 = 9088 in steps of
    # 128 × 8 = 1024 → 9216, 72 heads of 128, 8 KV heads.
    # Outside the MLP: embedding and LM head 2 × 32000 × 9216 = 589,824,000; per layer
    # q, o 2 × 9216² + k, v 2 × 9216 × 1024 + two norms 2 × 9216 = 188,762,112, × 71
    # = 13,402,109,952; final norm 9216. Together 13,991,943,168.
    # Each MLP column (gate, up, down): 71 × 3 × 9216 = 1,963,008; (70e9 − 13,991,943,168)
    # / 1,963,008 = 28,531.9 columns → 111 steps of 256 = 28,416.
    outside_mlp = 2 * 32000 * 9216 + 71 * (2 * 9216**2 + 2 * 9216 * 1024 + 2 * 9216) + 9216
    assert outside_mlp == 13_991_943_168
    tensors = outside_mlp + 28_416 * 71 * 3 * 9216
    assert tensors == 69_772_778_496  # 0.3% under 70e9 (half a step of 256 columns is 0.36%)

    model = CustomModel(params_billion=70, num_kv_heads=8)
    arch = resolve_architecture(model)
    shape = (arch.num_layers, arch.hidden_size, arch.num_attention_heads, arch.head_dim)
    assert shape == (71, 9216, 72, 128)
    assert arch.intermediate_size == 28_416
    assert arch.params_total == 70_000_000_000  # the stated size stays the count
    # llama.cpp writes and loads exactly these tensors (before, 12·L·h² with full-size K and V
    # in mind gave 60.7e9 here, 13% short).
    assert sum(t.elements for t in gguf_tensors(arch)) == tensors
    # transformers and vLLM at BF16: 2 bytes for each of the 70e9 parameters (no rotary cache:
    # a custom model states no context window).
    bf16 = estimate(EstimateRequest(model=model, precision="bf16"))
    assert bf16.breakdown.weights == 2 * 70_000_000_000
    vllm = estimate(
        EstimateRequest.model_validate(
            {
                "model": {"params_billion": 70, "num_kv_heads": 8},
                "runtime": "vllm",
                "tensor_parallel": 2,
                "num_gpus": 2,
                "vllm": {"gpu_memory_bytes": 141 << 30},
            }
        )
    )
    # Sharded over 2 ranks, the norms (71 × 2 + 1 of 9216, and what the 256-column rounding
    # leaves over) on both.
    norms = (71 * 2 * 9216 + 9216) + (70_000_000_000 - tensors)
    assert vllm.breakdown.weights == (2 * 70_000_000_000 - 2 * norms) // 2 + 2 * norms


def test_7b_with_full_heads_by_hand():
    # L = round((7e9 / 196608)^(1/3)) = 33; width 128 × 33 = 4224 in steps of 256 = 16.5 steps,
    # rounded to even: 4096, 32 heads of 128 (full K and V).
    # Outside the MLP: 2 × 32000 × 4096 + 33 × (4 × 4096² + 2 × 4096) + 4096 = 2,477,010,944.
    # Each MLP column: 33 × 3 × 4096 = 405,504; (7e9 − 2,477,010,944) / 405,504 = 11,154
    # → 44 steps of 256 = 11,264.
    outside_mlp = 2 * 32000 * 4096 + 33 * (4 * 4096**2 + 2 * 4096) + 4096
    assert outside_mlp == 2_477_010_944
    tensors = outside_mlp + 11_264 * 33 * 3 * 4096
    assert tensors == 7_044_608_000  # 0.6% over 7e9
    arch = resolve_architecture(CustomModel(params_billion=7))
    assert (arch.num_layers, arch.hidden_size, arch.num_kv_heads, arch.intermediate_size) == (
        33,
        4096,
        32,
        11_264,
    )
    assert sum(t.elements for t in gguf_tensors(arch)) == tensors


@pytest.mark.parametrize("billions", [0.5, 1, 3, 8, 13, 34, 70, 123, 405])
@pytest.mark.parametrize("kv_heads", [None, 1, 4, 8])
def test_shape_matches_the_stated_size_within_one_mlp_step(billions, kv_heads):
    fields = {"params_billion": billions} | ({"num_kv_heads": kv_heads} if kv_heads else {})
    arch = resolve_architecture(CustomModel.model_validate(fields))
    tensors = sum(t.elements for t in gguf_tensors(arch))
    # Half a step of 256 MLP columns over all layers is the most the rounding can leave.
    half_step = 256 * 3 * arch.hidden_size * arch.num_layers / 2
    assert abs(tensors - billions * 1e9) <= half_step
    assert abs(tensors / (billions * 1e9) - 1) < 0.015


def test_given_mlp_width_solves_the_depth():
    # Hidden 4096, 8 KV heads of 128, MLP 14336, 32000 tokens: a layer holds 2 × 4096² +
    # 2 × 4096 × 1024 + 3 × 4096 × 14336 + 2 × 4096 = 218,112,000; embedding and LM head
    # 262,144,000 and the final norm 4096, so 8e9 takes (8e9 − 262,148,096) / 218,112,000
    # = 35.5 → 35 layers (Python rounds 35.48 down).
    per_layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert per_layer == 218_112_000
    model = CustomModel(params_billion=8, hidden_size=4096, num_kv_heads=8, intermediate_size=14336)
    assert resolve_architecture(model).num_layers == round((8e9 - 262_148_096) / per_layer) == 35

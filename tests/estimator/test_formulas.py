"""Components against hand calculations and published figures (each test names its source)."""

import pytest

from calculator.estimator import (
    Architecture,
    ConfigError,
    EstimateRequest,
    estimate,
)
from calculator.estimator.lora import adapter_params, resolve_targets
from calculator.estimator.precision import WEIGHT_FORMATS
from tests.conftest import load_validation_config

GIB = 1 << 30
MIB = 1 << 20


def run(config, **fields):
    return estimate(EstimateRequest.model_validate({"model": {"config": config}, **fields}))


def test_kv_cache_llama31_8b_at_8k_is_one_gib(llama31_8b):
    # Hand calculation: 2 (K and V) × 32 layers × 8 KV heads × 128 head_dim × 2 bytes (bf16)
    # = 131,072 bytes per token; × 8192 tokens = 1,073,741,824 bytes = 1 GiB.
    result = run(llama31_8b, seq_len=8192)
    assert result.breakdown.kv_cache == 2 * 32 * 8 * 128 * 2 * 8192 == GIB


@pytest.mark.parametrize(("n_ctx", "mib"), [(2048, 256), (32768, 4096)])
def test_kv_cache_matches_llama_cpp_log(n_ctx, mib):
    # Published llama.cpp log (fedora-copr/logdetective PR #106, see
    # ../shared/research/published-measurements.md C5): a 32-layer, 8-KV-head, head_dim 128
    # model without a sliding window shows "KV self size" 256.00 MiB at n_ctx 2048 and
    # 4096.00 MiB at 32768 (f16 cache).
    config = load_validation_config("mistral-7b-v0.1") | {"sliding_window": None}
    result = run(config, seq_len=n_ctx, precision="fp16")
    assert result.breakdown.kv_cache == mib * MIB


def test_kv_cache_per_token_of_opt_13b_is_800_kb():
    # Kwon et al. 2023 (vLLM) §3: OPT-13B needs "800 KB" per token:
    # 2 × 5120 hidden × 40 layers × 2 bytes = 819,200 bytes.
    request = EstimateRequest.model_validate(
        {
            "model": {"num_layers": 40, "hidden_size": 5120, "num_attention_heads": 40},
            "precision": "fp16",
            "seq_len": 1,
        }
    )
    assert estimate(request).breakdown.kv_cache == 819_200


def test_sliding_window_layers_hold_the_whole_prompt_after_prefill():
    # Mistral-7B-v0.1's config sets sliding_window 4096 on every layer, but transformers'
    # DynamicSlidingWindowLayer.update (cache_utils.py, 5.24.0) keeps the window as a view of the
    # full-length K/V it concatenated, so after a 16k prefill each layer still holds 16384
    # tokens: 2 × 32 × 8 × 128 × 2 bytes × 16384 = 2 GiB (the window alone would be 512 MiB).
    result = run(load_validation_config("mistral-7b-v0.1"), seq_len=16384)
    assert result.breakdown.kv_cache == 2048 * MIB


def test_weights_are_params_times_bytes(llama31_8b):
    # 8,030,261,248 parameters (Meta's model card: 8.03B; transformers' count in
    # tests/estimator/data) × 2 bytes at bf16, × 4 at fp32.
    assert run(llama31_8b).breakdown.weights == 8_030_261_248 * 2
    assert run(llama31_8b, precision="fp32").breakdown.weights == 8_030_261_248 * 4


def test_nf4_storage_matches_the_qlora_paper():
    # Dettmers et al. 2023 §3 (Double Quantization): the quantization constants cost
    # 8/64 + 32/(64·256) = 0.127 bits per parameter on top of the 4-bit data.
    nf4 = WEIGHT_FORMATS["nf4"]
    assert nf4.data_bytes * 8 == 4
    assert nf4.overhead_bytes * 8 == pytest.approx(0.127, abs=0.0005)


def test_lora_rank8_qv_on_llama2_7b_trains_4_2m_params():
    # PEFT's README example prints "trainable params: 4,194,304" for Llama-2-7b, r=8, q/v:
    # 32 layers × 2 modules × 8 × (4096 + 4096).
    arch = Architecture.from_hf_config(load_validation_config("llama-2-7b"))
    targets = resolve_targets(arch, ["q_proj", "v_proj"])
    assert adapter_params(arch, rank=8, targets=targets) == 4_194_304


def test_mixed_precision_adamw_model_states(llama31_8b):
    # Mixed precision as Trainer(bf16=True) runs it: fp32 weights (4 B), fp32 gradients (4 B),
    # AdamW moments (8 B) and foreach's sqrt(v) temporary (4 B) per parameter at the step.
    params = 8_030_261_248
    result = run(
        llama31_8b,
        mode="full_finetune",
        mixed_precision=True,
        seq_len=128,
        optimizer_impl="foreach",
    )
    assert result.peak_phase == "optimizer step"
    assert result.breakdown.master_weights == 4 * params
    assert result.breakdown.gradients == 4 * params
    assert result.breakdown.optimizer_states == 12 * params


def test_zero3_shards_model_states_per_gpu(llama31_8b):
    # ZeRO paper (Rajbhandari et al. 2020) §5: stage 3 divides every model state by N.
    one = run(llama31_8b, mode="full_finetune", seq_len=512)
    eight = run(llama31_8b, mode="full_finetune", seq_len=512, num_gpus=8, zero_stage=3)
    assert eight.peak_allocated_bytes < one.peak_allocated_bytes / 2
    assert eight.breakdown.optimizer_states < one.breakdown.optimizer_states / 7


def test_tensor_parallel_never_splits_a_kv_head():
    # Qwen2.5-7B has 4 KV heads; at tp=8 each GPU still keeps one whole head (llm-analysis and
    # vLLM replicate KV heads when kv_heads < tp): a quarter of the single-GPU cache, not an eighth.
    config = load_validation_config("qwen2.5-7b")
    single = run(config, seq_len=4096).breakdown.kv_cache
    split = run(config, seq_len=4096, num_gpus=8, tensor_parallel=8).breakdown.kv_cache
    assert split == single // 4


def test_mixtral_active_params():
    # Mistral AI's announcement: 46.7B total, 12.9B active per token; the count summed from the
    # config (../shared/data/model_configs.json) is 12,879,925,248.
    arch = Architecture.from_hf_config(load_validation_config("mixtral-8x7b-v0.1"))
    assert arch.params_active == 12_879_925_248


def test_config_missing_a_field_names_it():
    config = load_validation_config("llama-2-7b")
    del config["num_hidden_layers"]
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        Architecture.from_hf_config(config)


def test_config_missing_an_optional_size_takes_the_class_default():
    """LlamaConfig (transformers 5.24 configuration_llama.py) declares intermediate_size 11008:
    a config without it builds Llama-2-7B's MLP, as the published config says anyway."""
    config = load_validation_config("llama-2-7b")
    whole = Architecture.from_hf_config(config).params_total
    del config["intermediate_size"]
    assert Architecture.from_hf_config(config).params_total == whole


def test_total_is_peak_plus_context_plus_reserve(llama31_8b):
    result = run(llama31_8b, mode="lora", seq_len=1024)
    b = result.breakdown
    assert result.total_bytes == result.peak_allocated_bytes + b.cuda_context + b.allocator_reserve
    assert result.total_bytes == b.total()


@pytest.mark.parametrize("field", ["batch_size", "seq_len"])
def test_more_work_never_needs_less_memory(llama31_8b, field):
    for mode in ("inference", "full_finetune", "lora", "qlora"):
        small = run(llama31_8b, mode=mode, **{field: 512})
        large = run(llama31_8b, mode=mode, **{field: 1024})
        assert large.total_bytes >= small.total_bytes, mode


def test_data_parallel_doubles_gradients_for_ddp_buckets(llama31_8b):
    # PyTorch DDP docs: gradient_as_bucket_view=False (default) keeps bucket copies, so the
    # saving from turning it on "will be equal to the total gradients size": 2 × 2 bytes × P.
    result = run(llama31_8b, mode="full_finetune", seq_len=128, num_gpus=2)
    assert result.breakdown.gradients == 2 * 2 * 8_030_261_248

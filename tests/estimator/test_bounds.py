"""The bounds every model description shares (calculator/estimator/bounds.py): hostile or
mistyped configs are refused with a message naming the field, whichever way they arrive.

The configs below start from Llama 3.1 8B's published config.json (validation/configs) and
change one field to a value no model has (security review of 654b6a2, findings 1, 5 and 16).
"""

import math

import pytest
from pydantic import ValidationError

from calculator.estimator import Architecture, ConfigError, ConfigModel
from calculator.estimator.bounds import MAX_CONFIG_DEPTH, MAX_PARAMS, check_config_document
from tests.conftest import load_validation_config


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def nested_lists(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (1e300, "at most 1,000,000"),
        pytest.param(10**200, "at most 1,000,000", id="10^200"),
        pytest.param(10**400, "no number type", id="10^400"),
        (1e12, "at most 1,000,000"),
        (4096.5, "non-negative integer"),
        (-4096, "non-negative integer"),
    ],
)
def test_an_impossible_hidden_size_is_refused_by_name(llama31_8b, value, words):
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config({**llama31_8b, "hidden_size": value})
    assert raised.value.field == "hidden_size"
    assert words in str(raised.value)


def test_a_real_config_still_reads(llama31_8b):
    # Llama 3.1 8B: 8,030,261,248 parameters (its model card's 8.03B; transformers' count in
    # tests/estimator/data/transformers_param_counts.json).
    assert Architecture.from_hf_config(llama31_8b).params_total == 8_030_261_248


def test_sizes_each_within_bounds_can_still_make_too_many_parameters(llama31_8b):
    # 10,000 layers × (4 · 10⁶ · 10⁶ attention + 3 · 10⁶ · 10⁷ MLP) ≈ 3.4·10¹⁷, past the
    # 10¹⁴ (100,000 B) a custom shape may have.
    huge = {
        **llama31_8b,
        "num_hidden_layers": 10_000,
        "hidden_size": 1_000_000,
        "num_attention_heads": 1_000,
        "num_key_value_heads": 1_000,
        "intermediate_size": 10_000_000,
    }
    huge.pop("head_dim", None)
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config(huge)
    assert f"{MAX_PARAMS:.0e}" in str(raised.value)


def test_a_number_field_refuses_infinity(llama31_8b):
    with pytest.raises(ConfigError) as raised:
        Architecture.from_hf_config({**llama31_8b, "attention_dropout": math.inf})
    assert raised.value.field == "attention_dropout"


def test_a_float_postgresql_hands_back_as_an_integer_is_kept():
    # Nemotron-H's published time_step_limit holds 1e+308; PostgreSQL's jsonb returns it as a
    # 309-digit integer, which a float still holds.
    check_config_document({"time_step_limit": [0.0, 10**308]})


def test_infinity_where_published_configs_hold_it_is_kept():
    # Nemotron-H's published config.json has "time_step_limit": [0.0, Infinity]; the document
    # check refuses no float, only what no config holds.
    check_config_document({"time_step_limit": [0.0, math.inf]})


@pytest.mark.parametrize(
    ("document", "words"),
    [
        (nested(MAX_CONFIG_DEPTH + 1), "deeper than"),
        ({"x": nested_lists(MAX_CONFIG_DEPTH)}, "deeper than"),
        ({"name": "a\x00b"}, "NUL"),
        ({"a\x00": 1}, "NUL"),
        ({"eos_token_id": 10**400}, "no number type"),
    ],
)
def test_documents_no_config_can_be_are_refused(document, words):
    with pytest.raises(ValueError, match=words):
        check_config_document(document)


def test_a_document_deep_enough_to_break_recursion_is_refused_without_recursing():
    # 100,000 levels: a recursive walk (or pydantic's serializer) would stop with RecursionError
    # long before; the check walks with a stack of its own.
    with pytest.raises(ValueError, match="deeper than"):
        check_config_document(nested(100_000))


def test_a_config_model_refuses_deep_nesting_before_anything_serialises_it(llama31_8b):
    with pytest.raises(ValidationError, match="deeper than"):
        ConfigModel(config={**llama31_8b, "x": nested(300)})


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        # Found by setting each field of the committed configs to a value of another type: the
        # OLMo hybrid reader divided by a text, Gemma 3n's softcapping failed Architecture's
        # own validation; both were exceptions no view expected (a 500).
        ("defaults-olmo_hybrid", "linear_num_key_heads", "x"),
        ("gemma-3n-e2b-text", "final_logit_softcapping", [1]),
    ],
)
def test_a_reader_tripping_on_a_value_no_config_has_is_a_config_error(name, field, value):
    config = {**load_validation_config(name), field: value}
    with pytest.raises(ConfigError, match="cannot be read"):
        Architecture.from_hf_config(config)


def test_copies_of_an_architecture_recount_their_parameters(llama31_8b):
    arch = Architecture.from_hf_config(llama31_8b)
    assert arch.params_total == 8_030_261_248
    # One extra million parameters (a vision tower, say): the copy's count is recomputed.
    bigger = arch.model_copy(update={"extra_params": arch.extra_params + 1_000_000})
    assert bigger.params_total == 8_030_261_248 + 1_000_000


def test_a_vllm_card_of_10_to_the_30_bytes_is_refused():
    # The fuzzing of POST /estimate: a 10³⁰-byte card gave a KV pool of 9·10²⁹ bytes. One card
    # may have at most the page's 100,000 GB.
    from calculator.estimator import EstimateRequest

    with pytest.raises(ValidationError, match="less than or equal"):
        EstimateRequest.model_validate(
            {
                "model": {"params_billion": 7},
                "runtime": "vllm",
                "vllm": {"gpu_memory_bytes": 10**30},
            }
        )


def test_stored_element_counts_past_any_checkpoint_are_refused(llama31_8b):
    with pytest.raises(ValidationError, match="describe no checkpoint"):
        ConfigModel(config=llama31_8b, checkpoint_dtypes={"I32": 10**30, "F16": 1})

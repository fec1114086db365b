"""A config is read as transformers' config class holds it (issue 27): an omitted field takes the
class's default, an attribute_map alias or a legacy name its __post_init__ converts sets the field.

Every expected value is the default or conversion of the named class in transformers 5.24.0
(``transformers/models/<family>/configuration_<family>.py``), or a count transformers made
(tests/estimator/data/transformers_param_counts.json), never this code's output.
"""

import json
from pathlib import Path

import pytest

from calculator.estimator import Architecture
from calculator.estimator.architecture import ConfigError
from calculator.estimator.families.class_defaults import class_default, with_class_defaults
from tests.conftest import load_validation_config

DATA = json.loads((Path(__file__).parent / "data" / "transformers_param_counts.json").read_text())


def _without(config: dict, *names: str) -> dict:
    return {k: v for k, v in config.items() if k not in names}


def test_smollm3_without_tie_word_embeddings_is_tied():
    """SmolLM3Config: ``tie_word_embeddings: bool = True``; SmolLM3-3B's config.json leaves the
    key out, so transformers ties (we untied it before: +8.5% of the model's weights)."""
    config = _without(load_validation_config("preset-smollm3-3b"), "tie_word_embeddings")
    arch = Architecture.from_hf_config(config)
    assert arch.tie_word_embeddings is True
    assert arch.params_total == DATA["models"]["preset-smollm3-3b"]["params_total"]


def test_lfm2_block_ff_dim_is_the_mlp_width():
    """Lfm2Config.__post_init__: ``intermediate_size = kwargs.pop("block_ff_dim", ...)`` and
    ``tie_word_embeddings = kwargs.pop("tie_embedding", ...)``; Lfm2MLP then takes 2/3 of it,
    times ``block_ffn_dim_multiplier`` (default 1.0), rounded up to ``block_multiple_of`` (256):
    LFM2-350M's block_ff_dim 6656 → int(6656·2/3) = 4437 → 4608 (refused before)."""
    config = {
        "model_type": "lfm2",
        "vocab_size": 65536,
        "hidden_size": 1024,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "full_attn_idxs": [2, 5, 8, 10, 12, 14],
        "block_ff_dim": 6656,
        "block_auto_adjust_ff_dim": True,
        "tie_embedding": False,
    }
    arch = Architecture.from_hf_config(config)
    assert arch.intermediate_size == 4608
    assert arch.tie_word_embeddings is False


def test_lfm2_block_ff_dim_wins_over_intermediate_size():
    """``kwargs.pop("block_ff_dim", self.intermediate_size)``: the old name is taken even when
    intermediate_size is also given."""
    raw = with_class_defaults(
        {"model_type": "lfm2", "intermediate_size": 4096, "block_ff_dim": 6656}
    )
    assert raw["intermediate_size"] == 6656


def test_bloom_reads_n_embed_and_n_layer():
    """BloomConfig: attribute_map ``num_hidden_layers → n_layer``, ``num_attention_heads →
    n_head``, and ``__post_init__`` takes ``n_embed`` for hidden_size (BLOOM-176B's names)."""
    published = load_validation_config("bloom-560m")
    config = {**_without(published, "hidden_size", "n_head"), "n_embed": 1024}
    config["num_attention_heads"] = 16
    assert (
        Architecture.from_hf_config(config).params_total
        == (DATA["models"]["bloom-560m"]["params_total"])
    )


def test_falcon_new_architecture_reads_num_kv_heads_and_ties_by_default():
    """FalconConfig: ``num_kv_heads`` (Falcon-40B/180B's name), ``tie_word_embeddings: bool =
    True`` when the config (Falcon-180B's) has no such key, ``n_embed`` taken for hidden_size."""
    config = {
        "model_type": "falcon",
        "n_embed": 1024,
        "num_hidden_layers": 2,
        "num_attention_heads": 16,
        "num_kv_heads": 4,
        "new_decoder_architecture": True,
        "vocab_size": 1000,
    }
    arch = Architecture.from_hf_config(config)
    assert arch.hidden_size == 1024
    assert arch.num_kv_heads == 4
    assert arch.tie_word_embeddings is True


def test_nemotron_h_first_layout_has_no_experts():
    """NemotronHConfig.__post_init__ turns ``hybrid_override_pattern`` (M = Mamba-2, * =
    attention, - = MLP) into ``layers_block_type``; Nemotron-H-56B's pattern has no E, so no
    MoE layer, whatever ``n_routed_experts`` defaults to (8)."""
    arch = Architecture.from_hf_config(load_validation_config("nemotron-h-56b-base-8k"))
    assert arch.num_experts == 0
    assert arch.params_total == DATA["models"]["nemotron-h-56b-base-8k"]["params_total"]


def test_gemma3_without_vocab_size_takes_the_class_default():
    """Gemma3TextConfig: ``vocab_size: int = 262208`` (refused before)."""
    config = load_validation_config("preset-gemma-3-4b")
    config["text_config"] = _without(config["text_config"], "vocab_size")
    assert Architecture.from_hf_config(config).vocab_size == 262_208


@pytest.mark.parametrize(
    ("model_type", "field", "expected"),
    [
        ("mistral", "num_key_value_heads", 8),  # MistralConfig, not num_attention_heads
        ("gemma", "head_dim", 256),  # GemmaConfig, not hidden_size / heads (192)
        ("gpt_oss", "head_dim", 64),
        ("smollm3", "tie_word_embeddings", True),
        ("falcon", "tie_word_embeddings", True),
        ("gemma3_text", "vocab_size", 262_208),
    ],
)
def test_class_defaults_are_transformers(model_type, field, expected):
    assert class_default(model_type, field) == expected


def test_mistral_without_num_key_value_heads_has_eight():
    """MistralConfig: ``num_key_value_heads: int | None = 8``; a config without the key is GQA
    with 8 KV heads in transformers, not multi-head attention."""
    config = _without(load_validation_config("mistral-7b-v0.1"), "num_key_value_heads")
    assert Architecture.from_hf_config(config).num_kv_heads == 8


def test_attribute_map_alias_sets_its_field():
    """GPTBigCodeConfig.attribute_map: ``hidden_size → n_embd`` (and so on): a config written
    with the mapped names reads as the canonical ones."""
    canonical = {"model_type": "gpt_bigcode", "n_embd": 64, "n_head": 4, "n_layer": 2}
    aliased = {"model_type": "gpt_bigcode", "hidden_size": 64, "num_attention_heads": 4}
    aliased["num_hidden_layers"] = 2
    assert (
        Architecture.from_hf_config(aliased).params_total
        == Architecture.from_hf_config(canonical).params_total
    )


def test_a_config_without_its_width_is_still_refused():
    """No published config leaves out its width: a fragment is refused, not completed with the
    class's example model (class_defaults.DEFINING_FIELDS)."""
    with pytest.raises(ConfigError, match="hidden_size"):
        Architecture.from_hf_config(
            _without(load_validation_config("mistral-7b-v0.1"), "hidden_size")
        )


def test_muse_glimmer_ties_on_the_roots_flag_only():
    """MuseGlimmerConfig declares no tie_word_embeddings: transformers 5.24 ties the head to the
    embedding for a root ``tie_word_embeddings: true`` and not for the text config's own flag;
    tying saves vocab × hidden = 202,048 × 6,656 parameters (MuseGlimmerTextConfig defaults)."""
    config = load_validation_config("defaults-muse_glimmer")
    untied = DATA["models"]["defaults-muse_glimmer"]["params_total"]
    text_only = {**config, "text_config": {**config["text_config"], "tie_word_embeddings": True}}
    assert Architecture.from_hf_config(text_only).params_total == untied
    root = {**config, "tie_word_embeddings": True}
    assert Architecture.from_hf_config(root).params_total == untied - 202_048 * 6_656


def test_granite_4_h_mamba_head_size_auto_is_expand_times_hidden_over_heads():
    """GraniteMoeHybridConfig: ``mamba_d_head: "auto"`` (its default) becomes mamba_expand ×
    hidden_size // mamba_n_heads = 2 × 1536 // 48 = 64 for Granite 4.0-H 1B, whose config says
    64 (before, an omitted field was read as 64 whatever the sizes)."""
    config = load_validation_config("preset-granite-4.0-h-1b")
    expected = DATA["models"]["preset-granite-4.0-h-1b"]["params_total"]
    assert Architecture.from_hf_config(_without(config, "mamba_d_head")).params_total == expected
    assert Architecture.from_hf_config({**config, "mamba_d_head": "auto"}).params_total == expected


def test_ernie_moe_layer_end_index_default_is_the_last_layer():
    """Ernie4_5_MoeConfig: ``moe_layer_end_index: int | None = -1``, turned into
    num_hidden_layers - 1 (27 for ERNIE-4.5-21B-A3B, as its config.json says)."""
    config = load_validation_config("ernie-4.5-21b-a3b")
    expected = DATA["models"]["ernie-4.5-21b-a3b"]["params_total"]
    for changed in (_without(config, "moe_layer_end_index"), {**config, "moe_layer_end_index": -1}):
        assert Architecture.from_hf_config(changed).params_total == expected


def test_smollm3_3b_as_published_is_tied():
    """HuggingFaceTB/SmolLM3-3B's config.json (validation/configs/smollm3-3b.json, verbatim) has
    no tie_word_embeddings; transformers' count of it is in the dataset."""
    config = load_validation_config("smollm3-3b")
    assert "tie_word_embeddings" not in config
    arch = Architecture.from_hf_config(config)
    assert arch.tie_word_embeddings is True
    assert arch.params_total == DATA["models"]["smollm3-3b"]["params_total"]


def test_devstral_small_2507_equals_its_safetensors_index():
    """The config rebuilt from Devstral-Small-2507's params.json counts what its
    model.safetensors.index.json states (metadata.total_parameters, 23,572,403,200)."""
    config = load_validation_config("devstral-small-2507")
    assert Architecture.from_hf_config(config).params_total == 23_572_403_200

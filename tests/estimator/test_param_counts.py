"""Parameter counts equal what transformers builds.

Expected values: tests/estimator/data/transformers_param_counts.json, produced by
validation/count_params.py (AutoModelForCausalLM.from_config on the meta device, transformers
5.24.0); and the counts in ../shared/data/model_configs.json (summed from the published configs,
see its README), which are independent of this code.
"""

import json
from pathlib import Path

import pytest

from calculator.estimator import Architecture
from tests.conftest import VALIDATION_CONFIGS

DATA = json.loads((Path(__file__).parent / "data" / "transformers_param_counts.json").read_text())
PRESETS = Path(__file__).resolve().parents[2] / "presets" / "models"


def _preset_configs() -> dict[str, dict]:
    configs = {}
    for path in sorted(PRESETS.glob("*.json")):
        for entry in json.loads(path.read_text())["presets"]:
            configs[f"preset:{entry['slug']}"] = entry["config"]
    return configs


def _config_for(name: str) -> dict:
    if name.startswith("preset:"):
        return _preset_configs()[name]
    return json.loads((VALIDATION_CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize("name", sorted(DATA["models"]))
def test_params_total_equals_transformers(name):
    expected = DATA["models"][name]["params_total"]
    assert Architecture.from_hf_config(_config_for(name)).params_total == expected


# Families of issue 12 that must each have at least one transformers-counted config.
WANTED = {
    "llama", "mistral", "qwen2", "qwen3", "gemma2", "phi3", "gpt2", "falcon", "mixtral",
    "phi", "gpt_bigcode", "starcoder2", "cohere", "cohere2", "granite", "granitemoe", "glm4",
    "glm4_moe", "smollm3", "exaone4", "ernie4_5", "ernie4_5_moe", "olmo3", "hunyuan_v1_dense",
    "hunyuan_v1_moe", "seed_oss", "bloom", "opt", "gptj", "stablelm", "minimax_m2",
    "glm4_moe_lite", "deepseek_v32", "glm_moe_dsa", "mamba", "mamba2", "lfm2", "jamba",
    "falcon_h1", "nemotron_h", "granitemoehybrid", "qwen3_next", "qwen3_5", "qwen3_5_moe",
    "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "llama4", "llama4_text",
    "gemma3", "gemma3n_text", "mllama", "mistral3",
    "gemma4", "gemma4_text", "kimi_k25", "mimo_v2_flash", "deepseek_v4",
    "cwm", "helium", "internlm3", "ministral3", "vaultgemma", "granitemoeshared",
    "olmoe", "flex_olmo", "exaone_moe", "arcee", "apertus", "bitnet", "afmoe", "cohere2_moe",
    "dots1", "lfm2_moe", "minimax", "longcat_flash",
    "phimoe", "dbrx", "minicpm3", "kimi_linear", "exaone", "olmo", "glm",
    "olmo_hybrid", "falcon_mamba", "jetmoe", "bamba",
    "nemotron", "laguna", "deepseek_v3", "minimax_m3_vl", "muse_glimmer",
}  # fmt: skip


def test_dataset_covers_every_listed_architecture():
    model_types = {entry["model_type"] for entry in DATA["models"].values()}
    assert model_types >= WANTED


def test_every_registered_family_is_counted():
    """Each model_type a family module registers has a transformers count in the dataset."""
    from calculator.estimator.families import known_model_types

    counted = {entry["model_type"] for entry in DATA["models"].values()}
    # yi is read by the Llama reader (transformers has no "yi" model_type; Yi configs say llama).
    # qwen3_5_text / qwen3_5_moe_text are counted inside qwen3_5 / qwen3_5_moe; gemma3n's vision
    # tower needs timm, so only its language model (gemma3n_text) is counted.
    # minimax_m1 / minimax_text_01 are MiniMax's remote-code configs, which transformers cannot
    # build; their count is the minimax-m1 row (the same config in transformers' minimax layout,
    # see test_families.test_minimax_m1_as_released_reads_its_attn_type_list).
    inside = {"qwen3_5_text", "qwen3_5_moe_text", "gemma3n", "minimax_m1", "minimax_text_01"}
    assert known_model_types() - {"__multimodal__", "__generic__", "yi"} - inside <= counted


def test_unregistered_model_type_read_as_the_class_its_architectures_names():
    """Kimi K2 (model_type kimi_k2, unknown to transformers) is built as DeepseekV3ForCausalLM;
    validation/common.py builds it the same way and the dataset records that count."""
    config = json.loads((VALIDATION_CONFIGS / "kimi-k2-text.json").read_text())
    arch = Architecture.from_hf_config(config)
    assert arch.model_type == "kimi_k2"
    assert arch.attention_kind == "mla"
    assert arch.params_total == DATA["models"]["kimi-k2-text"]["params_total"]

"""The registry of family readers, keyed by ``model_type``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from calculator.estimator.architecture import Architecture, ConfigFields
from calculator.estimator.families.class_defaults import with_class_defaults

Reader = Callable[[ConfigFields], Architecture]

READERS: dict[str, Reader] = {}

# transformers' causal-LM class for each registered model_type (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
# transformers 5.24): a config whose model_type transformers does not know but whose
# ``architectures`` names one of these classes (Kimi K2: kimi_k2 -> DeepseekV3ForCausalLM) is
# built from that class, so it is read as that class's family.
ARCHITECTURE_MODEL_TYPES: dict[str, str] = {
    "BloomForCausalLM": "bloom",
    "BambaForCausalLM": "bamba",
    "AfmoeForCausalLM": "afmoe",
    "ApertusForCausalLM": "apertus",
    "Cohere2MoeForCausalLM": "cohere2_moe",
    "Dots1ForCausalLM": "dots1",
    "DbrxForCausalLM": "dbrx",
    "Lfm2ForCausalLM": "lfm2",
    "Lfm2MoeForCausalLM": "lfm2_moe",
    "ArceeForCausalLM": "arcee",
    "BitNetForCausalLM": "bitnet",
    "ExaoneMoeForCausalLM": "exaone_moe",
    "FlexOlmoForCausalLM": "flex_olmo",
    "OlmoeForCausalLM": "olmoe",
    "CohereForCausalLM": "cohere",
    "CwmForCausalLM": "cwm",
    "DeepseekV4ForCausalLM": "deepseek_v4",
    "Gemma4ForCausalLM": "gemma4_text",
    "Gemma4ForConditionalGeneration": "gemma4",
    "GraniteMoeSharedForCausalLM": "granitemoeshared",
    "HeliumForCausalLM": "helium",
    "JetMoeForCausalLM": "jetmoe",
    "KimiLinearForCausalLM": "kimi_linear",
    "LagunaForCausalLM": "laguna",
    "MiMoV2FlashForCausalLM": "mimo_v2_flash",
    "Ministral3ForCausalLM": "ministral3",
    "VaultGemmaForCausalLM": "vaultgemma",
    "Cohere2ForCausalLM": "cohere2",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "Ernie4_5ForCausalLM": "ernie4_5",
    "Ernie4_5_MoeForCausalLM": "ernie4_5_moe",
    "Exaone4ForCausalLM": "exaone4",
    "FalconForCausalLM": "falcon",
    "FalconMambaForCausalLM": "falcon_mamba",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Gemma3ForCausalLM": "gemma3_text",
    "Glm4ForCausalLM": "glm4",
    "Glm4MoeForCausalLM": "glm4_moe",
    "Glm4MoeLiteForCausalLM": "glm4_moe_lite",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
    "GPT2LMHeadModel": "gpt2",
    "GPTBigCodeForCausalLM": "gpt_bigcode",
    "GPTNeoXForCausalLM": "gpt_neox",
    "GptOssForCausalLM": "gpt_oss",
    "GPTJForCausalLM": "gptj",
    "GraniteForCausalLM": "granite",
    "GraniteMoeForCausalLM": "granitemoe",
    "HunYuanDenseV1ForCausalLM": "hunyuan_v1_dense",
    "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe",
    "LlamaForCausalLM": "llama",
    "LongcatFlashForCausalLM": "longcat_flash",
    "MiniMaxForCausalLM": "minimax",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "MiniMaxM3SparseForConditionalGeneration": "minimax_m3_vl",
    "MuseGlimmerForConditionalGeneration": "muse_glimmer",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "OlmoForCausalLM": "olmo",
    "OlmoHybridForCausalLM": "olmo_hybrid",
    "Olmo2ForCausalLM": "olmo2",
    "GlmForCausalLM": "glm",
    "Olmo3ForCausalLM": "olmo3",
    "OPTForCausalLM": "opt",
    "NemotronForCausalLM": "nemotron",
    "PhiForCausalLM": "phi",
    "PhimoeForCausalLM": "phimoe",
    "MiniCPM3ForCausalLM": "minicpm3",
    "Phi3ForCausalLM": "phi3",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "SeedOssForCausalLM": "seed_oss",
    "SmolLM3ForCausalLM": "smollm3",
    "StableLmForCausalLM": "stablelm",
    "Starcoder2ForCausalLM": "starcoder2",
}


def register(*model_types: str) -> Callable[[Reader], Reader]:
    """Class the decorated reader as the one for these ``model_type`` values."""

    def decorate(reader: Reader) -> Reader:
        for model_type in model_types:
            if model_type in READERS:
                raise ValueError(f"model_type {model_type!r} registered twice")
            READERS[model_type] = reader
        return reader

    return decorate


def known_model_types() -> frozenset[str]:
    return frozenset(READERS)


def family_of(config: Mapping[str, Any]) -> str | None:
    """The registered ``model_type`` whose reader reads this config, or None (generic reader):
    the config's own ``model_type``, else the family of the class its ``architectures`` names."""
    model_type = str(config.get("model_type") or "")
    if model_type in READERS:
        return model_type
    architectures = config.get("architectures")
    if isinstance(architectures, list):
        for name in architectures:
            if isinstance(name, str) and name in ARCHITECTURE_MODEL_TYPES:
                return ARCHITECTURE_MODEL_TYPES[name]
    return None


def reader_for(config: Mapping[str, Any]) -> Reader:
    """The reader for a config: its family's, else the generic (Llama-shaped) one. A family's
    reader sees the config as transformers' config class holds it (``with_class_defaults``)."""
    family = family_of(config)
    if family is not None:
        read = READERS[family]
        return lambda c: read(ConfigFields(with_class_defaults(c.raw, family)))
    if isinstance(config.get("text_config"), Mapping):
        return READERS["__multimodal__"]
    return READERS["__generic__"]

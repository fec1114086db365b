"""``estimate``: the one entry point the page, the API and the CLI share.

It resolves the model's architecture and the parallel plan, notes what it assumed about the
model, and hands the request to its runtime: llama.cpp or vLLM (``serving``), or transformers
inference (``inference``) or training (``training``).
"""

from __future__ import annotations

from calculator.estimator.checkpoint import checkpoint_weight_bytes
from calculator.estimator.inference import cache_by_layer_kind, estimate_inference
from calculator.estimator.messages import gettext_noop
from calculator.estimator.notes import Notes
from calculator.estimator.parallelism import plan_for
from calculator.estimator.resolve import architecture_from_custom, resolve_architecture
from calculator.estimator.schemas import CustomModel, EstimateRequest, EstimateResult
from calculator.estimator.serving import (
    llama_cpp_layout,
    llama_cpp_options,
    llama_cpp_result,
    vllm_options,
    vllm_result,
)
from calculator.estimator.training import estimate_training

# Importers of this module's earlier contents find them here still.
__all__ = [
    "architecture_from_custom",
    "cache_by_layer_kind",
    "checkpoint_weight_bytes",
    "estimate",
    "llama_cpp_layout",
    "llama_cpp_options",
    "resolve_architecture",
    "vllm_options",
]


def estimate(request: EstimateRequest) -> EstimateResult:
    """Per-GPU memory for one request: a breakdown, the peak of live tensors, and the total."""
    arch = resolve_architecture(request.model)
    plan = plan_for(
        num_gpus=request.num_gpus,
        tensor_parallel=request.tensor_parallel,
        zero_stage=request.zero_stage,
        pipeline_parallel=request.pipeline_parallel,
        context_parallel=request.context_parallel,
    )
    notes = Notes()
    if isinstance(request.model, CustomModel):
        notes.add(
            gettext_noop(
                "Custom model: missing shape fields were filled with Llama-style defaults "
                "(%(layers)s layers, hidden %(hidden)s, %(heads)s heads, intermediate "
                "%(inter)s, vocabulary %(vocab)s)."
            ),
            gettext_noop(
                "Kaplan et al. 2020 (arXiv:2001.08361) §2.1; Touvron et al. 2023 (arXiv:2307.09288) Table 1"
            ),
            layers=arch.num_layers,
            hidden=arch.hidden_size,
            heads=arch.num_attention_heads,
            inter=arch.intermediate_size,
            vocab=arch.vocab_size,
        )
    image_tokens = 0
    if arch.vision is not None:
        images = 1 if request.images_per_request is None else request.images_per_request
        image_tokens = images * arch.vision.tokens_per_image
        notes.add(
            gettext_noop(
                "Vision-language model: the vision tower's %(params)s parameters are in the "
                "weights; %(images)s image(s) of 1024 × 1024 pixels add %(tokens)s tokens to each "
                "sequence (%(per_image)s per image)."
            ),
            arch.vision.source,
            params=f"{arch.extra_params:,}",
            images=images,
            tokens=image_tokens,
            per_image=arch.vision.tokens_per_image,
        )
        if image_tokens:
            request = request.model_copy(update={"seq_len": request.seq_len + image_tokens})
    if request.runtime == "llama_cpp":
        result = llama_cpp_result(request, arch, notes)
    elif request.runtime == "vllm":
        result = vllm_result(request, arch, notes)
    elif request.mode == "inference":
        result = estimate_inference(request, arch, plan, notes)
    else:
        result = estimate_training(request, arch, plan, notes)
    return result.model_copy(update={"image_tokens": image_tokens}) if image_tokens else result

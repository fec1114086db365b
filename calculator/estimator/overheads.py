"""Memory that no tensor accounts for: the CUDA context and the caching allocator's slack."""

from __future__ import annotations

from calculator.estimator.messages import gettext_noop

MIB = 1024 * 1024

CUDA_CONTEXT_BYTES = 1024 * MIB
CUDA_CONTEXT_SOURCE = gettext_noop(
    "Published measurements: 1343 MB of NVML 'used' after the first CUDA tensor on a V100 "
    "(CUDA 11.2; Hugging Face Transformers docs, 'Efficient Training on a Single GPU'); the same "
    "docs give 1-2 GB in general and PyTorch's lazy module loading (CUDA >= 11.7) lowers it. "
    "We take 1 GiB; no GPU was available to calibrate it here."
)

# The caching allocator rounds blocks up and keeps freed blocks for reuse, so nvidia-smi shows
# more than the peak of live tensors (PyTorch docs, "CUDA semantics: memory management").
INFERENCE_RESERVE_FRACTION = 0.05
TRAINING_RESERVE_FRACTION = 0.10
RESERVE_SOURCE = gettext_noop(
    # xgettext:no-python-format
    "PyTorch CUDA semantics docs (caching allocator: memory_reserved >= memory_allocated); "
    "size from the gap between a live-tensor count and NVML in Hugging Face's BERT-large "
    "measurements (12-20% including context and framework tensors). A default until calibrated "
    "on a GPU."
)


def cuda_context_bytes() -> int:
    return CUDA_CONTEXT_BYTES


def allocator_reserve_bytes(peak_allocated_bytes: int, *, training: bool) -> int:
    fraction = TRAINING_RESERVE_FRACTION if training else INFERENCE_RESERVE_FRACTION
    return int(peak_allocated_bytes * fraction)

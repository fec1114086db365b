"""Gradients, optimizer states and the optimizer step's temporaries."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.messages import gettext_noop

BNB_SOURCE = (
    "bitsandbytes-foundation/bitsandbytes@06029dd6 bitsandbytes/optim/optimizer.py "
    "(Optimizer2State.init_state, get_state_buffer)"
)
TORCH_ADAM_SOURCE = "pytorch/pytorch v2.13.0 (cf30153c) torch/optim/adam.py"
BNB_BLOCK = 2048
"""bitsandbytes keeps one fp32 absmax per 2048 state elements (``blocks = n // 2048``)."""
BNB_MIN_8BIT_SIZE = 4096
"""Tensors with fewer elements keep 32-bit states (``min_8bit_size=4096``)."""


@dataclass(frozen=True)
class OptimizerProfile:
    label: str
    state_bytes_per_param: float
    """Bytes of state per trainable parameter, given the parameters' own element size."""
    step_temp_fraction: float
    """Temporaries of the step, in units of one state-dtype copy of all trainable params."""
    step_temp_largest_tensors: float
    """Temporaries of the step, in units of the largest trainable tensor (per-tensor loops)."""
    source: str
    paged: bool = False
    """States live in CUDA unified memory (bitsandbytes paged optimizers)."""
    small_tensor_state_bytes: float | None = None
    """Bytes per element of state for tensors below ``BNB_MIN_8BIT_SIZE`` elements."""


def adam_step_temporaries(impl: str) -> tuple[float, float]:
    """(state-sized copies, largest-tensor copies) alive during one AdamW step.

    Read in ``torch/optim/adam.py`` (AdamW is Adam with decoupled weight decay):
    ``_fused_adam`` calls ``torch._fused_adamw_``, one kernel that updates parameters and moments
    in place and allocates nothing; ``_multi_tensor_adam`` (foreach) builds
    ``exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`` for every parameter of a
    device/dtype group at once, then divides and adds in place (one state-sized copy);
    ``_single_tensor_adam`` (for_loop) computes ``denom = (exp_avg_sq.sqrt() / c).add_(eps)``
    per parameter: the square root and the quotient of one tensor live together, and the previous
    tensor's ``denom`` stays referenced until the new one is assigned (up to three tensors).
    """
    if impl == "fused":
        return 0.0, 0.0
    if impl == "foreach":
        return 1.0, 0.0
    return 0.0, 3.0


def optimizer_profile(name: str, param_bytes: float, impl: str = "foreach") -> OptimizerProfile:
    """State kept per trainable parameter by each optimizer, and the step's temporaries.

    AdamW keeps two moments (Loshchilov & Hutter 2019, arXiv:1711.05101, Alg. 2) in the
    parameters' dtype; the step's temporaries depend on the implementation
    (``adam_step_temporaries``). bitsandbytes' 8-bit AdamW keeps both moments in 8 bits with one
    fp32 absmax per 2048-element block, tensors under 4096 elements in fp32, and updates in one
    kernel (``optimizer_update_8bit_blockwise``; Dettmers et al. 2022, arXiv:2110.02861 §2); its
    32-bit states are fp32 whatever the parameters' dtype. Paged variants allocate the same
    states in CUDA unified memory, which the driver can evict to CPU RAM under pressure. SGD with
    momentum keeps one buffer; Lion one (Chen et al. 2023, arXiv:2302.06675). Adafactor factors
    the second moment into row and column statistics (Shazeer & Stern 2018, arXiv:1804.04235
    §3), with no first moment by default.
    """
    if name == "adamw":
        copies, largest = adam_step_temporaries(impl)
        return OptimizerProfile(
            "AdamW",
            2 * param_bytes,
            copies,
            largest,
            gettext_noop("Loshchilov & Hutter 2019; torch.optim.AdamW") + "; " + TORCH_ADAM_SOURCE,
        )
    if name in {"adamw_8bit", "paged_adamw_8bit"}:
        paged = name == "paged_adamw_8bit"
        return OptimizerProfile(
            "paged 8-bit AdamW" if paged else "8-bit AdamW",
            2 * (1 + 4 / BNB_BLOCK),
            0.0,
            0.0,
            gettext_noop("Dettmers et al. 2022 (8-bit optimizers)") + "; " + BNB_SOURCE,
            paged=paged,
            small_tensor_state_bytes=2 * 4.0,
        )
    if name == "paged_adamw":
        return OptimizerProfile(
            "paged AdamW (32-bit)",
            2 * 4.0,
            0.0,
            0.0,
            gettext_noop("bitsandbytes PagedAdamW32bit") + "; " + BNB_SOURCE,
            paged=True,
        )
    if name == "sgd":
        return OptimizerProfile("SGD", 0.0, 0.0, 0.0, gettext_noop("torch.optim.SGD"))
    if name == "sgd_momentum":
        return OptimizerProfile(
            "SGD with momentum",
            param_bytes,
            0.0,
            0.0,
            gettext_noop("torch.optim.SGD(momentum>0)"),
        )
    if name == "lion":
        return OptimizerProfile(
            "Lion", param_bytes, 1.0, 0.0, gettext_noop("Chen et al. 2023 (Lion)")
        )
    if name == "adafactor":
        return OptimizerProfile(
            "Adafactor", 0.0, 0.0, 0.0, gettext_noop("Shazeer & Stern 2018 (Adafactor)")
        )
    raise ValueError(f"unknown optimizer {name!r}")


def adafactor_state_elements(matrix_shapes: list[tuple[int, int, int]], vector_params: int) -> int:
    """Row + column statistics per matrix, a full second moment for vectors."""
    return sum(copies * (rows + cols) for rows, cols, copies in matrix_shapes) + vector_params


FP32_BYTES = 4
# A citation, left as published.
DEEPSPEED_MEMORY_DOCS = "DeepSpeed docs/code-docs/source/memory.rst (Memory Requirements)"


def fp32_master_bytes(trainable_params: float, optimizer_shards: int) -> float:
    """The fp32 copy of 16-bit weights that the optimizer updates, partitioned like its states.

    ZeRO's K = 12 bytes per parameter of optimizer state are 4 of fp32 master weights and 8 of
    fp32 Adam moments, and stage 1 partitions all 12 over the data-parallel ranks (Rajbhandari
    et al. 2020, arXiv:1910.02054 §3.1, §5.1)."""
    return trainable_params * FP32_BYTES / optimizer_shards


def fp32_gradient_bytes(trainable_params: float, optimizer_shards: int) -> float:
    """A rank's gradient partition in fp32: DeepSpeed converts the 16-bit gradients to fp32 for
    the update and keeps them in fp32 on the host when the optimizer is offloaded ("Note about
    gradients" in DeepSpeed's memory docs: 4 bytes per gradient)."""
    return trainable_params * FP32_BYTES / optimizer_shards

"""Gradients, optimizer states and the optimizer step's temporaries."""

from __future__ import annotations

from dataclasses import dataclass

from calculator.estimator.messages import gettext_noop


@dataclass(frozen=True)
class OptimizerProfile:
    label: str
    state_bytes_per_param: float
    """Bytes of state per trainable parameter, given the parameters' own element size."""
    step_temp_fraction: float
    """Temporaries of the step, in units of one state-dtype copy of all trainable params."""
    source: str


def optimizer_profile(name: str, param_bytes: float) -> OptimizerProfile:
    """State kept per trainable parameter by each optimizer, in the parameters' dtype.

    AdamW keeps two moments (Loshchilov & Hutter 2019, arXiv:1711.05101, Alg. 2); PyTorch's
    default multi-tensor (foreach) implementation on CUDA also materialises ``sqrt(v)`` for all
    parameters at once (``torch/optim/adam.py``, ``_multi_tensor_adam``), one more state-sized
    temporary. bitsandbytes' 8-bit Adam keeps both moments in 8 bits with one fp32 absmax per
    2048-element block (Dettmers et al. 2022, arXiv:2110.02861 §2). SGD with momentum keeps one
    buffer; Lion one (Chen et al. 2023, arXiv:2302.06675). Adafactor factors the second moment
    into row and column statistics (Shazeer & Stern 2018, arXiv:1804.04235 §3), with no first
    moment by default.
    """
    if name == "adamw":
        return OptimizerProfile(
            "AdamW",
            2 * param_bytes,
            1.0,
            gettext_noop("Loshchilov & Hutter 2019; torch.optim.AdamW foreach"),
        )
    if name == "adamw_8bit":
        return OptimizerProfile(
            "8-bit AdamW",
            2 * (1 + 4 / 2048),
            0.0,
            gettext_noop("Dettmers et al. 2022 (8-bit optimizers)"),
        )
    if name == "sgd":
        return OptimizerProfile("SGD", 0.0, 0.0, gettext_noop("torch.optim.SGD"))
    if name == "sgd_momentum":
        return OptimizerProfile(
            "SGD with momentum", param_bytes, 0.0, gettext_noop("torch.optim.SGD(momentum>0)")
        )
    if name == "lion":
        return OptimizerProfile("Lion", param_bytes, 1.0, gettext_noop("Chen et al. 2023 (Lion)"))
    if name == "adafactor":
        return OptimizerProfile(
            "Adafactor", 0.0, 0.0, gettext_noop("Shazeer & Stern 2018 (Adafactor)")
        )
    raise ValueError(f"unknown optimizer {name!r}")


def adafactor_state_elements(matrix_shapes: list[tuple[int, int, int]], vector_params: int) -> int:
    """Row + column statistics per matrix, a full second moment for vectors."""
    return sum(copies * (rows + cols) for rows, cols, copies in matrix_shapes) + vector_params

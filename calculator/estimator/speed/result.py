"""What the speed estimate returns."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from calculator.estimator.schemas import Assumption
from calculator.estimator.speed.hardware import _Frozen


class SpeedResult(_Frozen):
    runtime: str
    backend: str
    decode_tokens_per_s: float | None = Field(description="One sequence, empty context.")
    decode_tokens_per_s_full_context: float | None = Field(
        description="One sequence with the chosen context in its KV cache."
    )
    decode_tokens_per_s_total: float | None = Field(
        description="All sequences of the batch together, at half the context on average."
    )
    prefill_tokens_per_s: float | None
    time_to_first_token_s: float | None
    prompt_tokens: int
    decode_bound: Literal["memory", "compute"] | None
    host_slowdown: float | None = Field(
        default=None,
        description="llama.cpp with layers on the CPU: decode time ÷ the same with all on the GPU.",
    )
    training_tokens_per_s_per_gpu: float | None = None
    step_time_s: float | None = None
    time_to_train_s: float | None = None
    cost: float | None = None
    assumptions: list[Assumption] = Field(default_factory=list)


class SeriesPoint(_Frozen):
    x: float
    y: float

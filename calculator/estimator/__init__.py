"""The estimator: pure Python (no Django), pydantic in and out.

``estimate(EstimateRequest) -> EstimateResult`` is the one function the page, the API and the
``manage.py estimate`` command call.
"""

from calculator.estimator import families  # noqa: F401 (fills the config readers)
from calculator.estimator.architecture import Architecture, ConfigError
from calculator.estimator.core import estimate, resolve_architecture
from calculator.estimator.schemas import (
    Assumption,
    Breakdown,
    ConfigModel,
    CustomModel,
    EstimateRequest,
    EstimateResult,
    LoraSettings,
)

__all__ = [
    "Architecture",
    "Assumption",
    "Breakdown",
    "ConfigError",
    "ConfigModel",
    "CustomModel",
    "EstimateRequest",
    "EstimateResult",
    "LoraSettings",
    "estimate",
    "resolve_architecture",
]

"""Where Django looks for the app's models. They live in the catalogue room
(calculator/catalogue/models.py); the migrations name the callables below by this path."""

from calculator.catalogue.models import (
    GpuSpec,
    ModelAlias,
    ModelPreset,
    PastedConfig,
    RateCounter,
    SavedResult,
    latest_release_year,
    new_saved_id,
    validate_config,
    validate_findable_name,
)

__all__ = [
    "GpuSpec",
    "ModelAlias",
    "ModelPreset",
    "PastedConfig",
    "RateCounter",
    "SavedResult",
    "latest_release_year",
    "new_saved_id",
    "validate_config",
    "validate_findable_name",
]

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VALIDATION_CONFIGS = ROOT / "validation" / "configs"


def load_validation_config(name: str) -> dict:
    """A published config.json, as committed under validation/configs (sources in SOURCES.md)."""
    return json.loads((VALIDATION_CONFIGS / f"{name}.json").read_text())


@pytest.fixture
def llama31_8b() -> dict:
    return load_validation_config("llama-3.1-8b")


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate-limit counters and cached estimates never leak from one test into another."""
    from django.core.cache import cache

    cache.clear()
    return

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
def _fresh_cache(request, django_db_blocker):
    """Rate-limit counters and cached pages never leak from one test into another.

    The default cache is a table in the test database, so only tests that use the database
    can touch it (and clear it); under Redis (REDIS_URL, `make test-services`) only this run's
    keys are removed, never the whole Redis database, which other runs may share.
    """
    from django.conf import settings
    from django.core.cache import cache

    if settings.REDIS_URL:
        clear_redis_prefix(settings.REDIS_URL, settings.CACHE_KEY_PREFIX)
    elif request.node.get_closest_marker("django_db") or "django_db_setup" in request.fixturenames:
        request.getfixturevalue("django_db_setup")
        with django_db_blocker.unblock():
            cache.clear()


def clear_redis_prefix(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()

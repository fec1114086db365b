import json
import socket
from pathlib import Path

import pytest

from tests.hub_standin import HubStandIn, Server

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

    from calculator.web import page_cache, views

    page_cache._unavailable_until = 0.0  # an outage a test simulated does not outlive it
    views._SEEN.clear()  # which pages this process rendered before: see views._seen_before
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


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(autouse=True)
def _no_hub(monkeypatch):
    """No test reaches the real Hugging Face Hub: HF_ENDPOINT points at a closed local port
    unless the test starts the stand-in (``hub``), and no token comes from the environment."""
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.fixture
def hub(monkeypatch):
    """A local Hub stand-in (tests/hub_standin.py) on a random port, with HF_ENDPOINT at it."""
    stand_in = HubStandIn()
    with Server(stand_in):
        monkeypatch.setenv("HF_ENDPOINT", stand_in.url)
        yield stand_in

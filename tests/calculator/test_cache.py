"""The cache every worker shares: a database table by default, Redis with REDIS_URL."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from django.core.cache import cache
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def caches_for(**env: str) -> dict:
    """CACHES as config.settings builds it from this environment."""
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("DJANGO_") and k != "REDIS_URL"
    }
    done = subprocess.run(
        [sys.executable, "-c", "import json, config.settings as s; print(json.dumps(s.CACHES))"],
        cwd=ROOT,
        env={**clean, "DJANGO_SECRET_KEY": "x" * 50, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)["default"]


def test_without_redis_the_cache_is_a_database_table():
    default = caches_for()
    assert default["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert default["LOCATION"] == "calculator_cache"


def test_redis_url_selects_djangos_redis_backend():
    default = caches_for(REDIS_URL="redis://cache.internal:6379/2", DJANGO_CACHE_KEY_PREFIX="blue")
    assert default["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert default["LOCATION"] == "redis://cache.internal:6379/2"
    assert default["KEY_PREFIX"] == "blue"


@pytest.mark.django_db
def test_cached_values_land_in_the_shared_store(settings):
    cache.set("probe", {"bytes": 1}, 60)
    assert cache.get("probe") == {"bytes": 1}
    if settings.REDIS_URL:  # make test-services
        client = redis.Redis.from_url(settings.REDIS_URL)
        assert client.exists(cache.make_key("probe")) == 1
        client.close()
        return
    # pytest-django builds the test database with Django's create_test_db, which runs
    # createcachetable: the value is a row of that table.
    assert "calculator_cache" in connection.introspection.table_names()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM calculator_cache")
        assert cursor.fetchone() == (1,)


@pytest.mark.django_db
def test_a_result_is_shared_once_it_is_asked_for_again(client, monkeypatch):
    """Never-seen inputs (most are one keystroke of someone typing) are not written to the shared
    cache (database table or Redis); the second request for the same link is, and from then on
    it is served from there."""
    written: list[str] = []
    original = cache.set

    def recording_set(key, *args, **kwargs):
        written.append(key)
        return original(key, *args, **kwargs)

    # calculator.web.views uses the same django.core.cache.cache object.
    monkeypatch.setattr(cache, "set", recording_set)
    url = f"/?model=Llama+3.1+8B&seq=4321&probe={uuid.uuid4().hex}"
    client.get(url, HTTP_HX_REQUEST="true")
    assert [key for key in written if key.startswith("page:")] == []
    client.get(url, HTTP_HX_REQUEST="true")
    assert len([key for key in written if key.startswith("page:")]) == 1
    third = client.get(url, HTTP_HX_REQUEST="true")
    assert third.context is None  # served from the cache: no template rendered

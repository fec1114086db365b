"""Outages of the services the pages need answer 503 quickly, or are served around, and end by
themselves (finding 7 of the security review of 654b6a2).

The outages are real ones on ports the tests own: a Redis URL on a port nothing listens on
(stopped), a socket that accepts connections and never answers (paused, as ``kill -STOP`` left
the review's Redis), and a PostgreSQL URL on a closed port. The machine's own services are
never touched.
"""

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from tests.conftest import ROOT, closed_port

pytestmark = pytest.mark.django_db


def redis_at(settings, url: str, timeout: float = 0.3) -> None:
    """Point the cache and the rate counters at ``url`` (as REDIS_URL does)."""
    settings.REDIS_URL = url
    settings.REDIS_TIMEOUT_SECONDS = timeout
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "outage",
            "OPTIONS": {"socket_timeout": timeout, "socket_connect_timeout": timeout},
        }
    }


@pytest.fixture
def paused_redis():
    """A listening socket that never reads nor answers: connections succeed, replies never
    come (what a Redis stopped with SIGSTOP looks like from a client)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    server.close()


def finishes_within(seconds: float, call):
    """``call()``'s result, or a failure if it was still running after ``seconds`` (a generous
    bound: the review saw 30 s hangs, the worker timeout)."""
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return outcome["value"]


@pytest.mark.parametrize("outage", ["stopped", "paused"])
def test_pages_are_served_without_a_dead_redis(client, settings, paused_redis, outage):
    redis_at(
        settings, f"redis://127.0.0.1:{closed_port()}/0" if outage == "stopped" else paused_redis
    )
    page = finishes_within(20, lambda: client.get("/", {"model": "qwen2-7b"}))
    fragment = finishes_within(
        20, lambda: client.get("/", {"model": "qwen2-7b"}, HTTP_HX_REQUEST="true")
    )
    assert page.status_code == fragment.status_code == 200
    assert client.get("/fits/").status_code == 200


@pytest.mark.parametrize("outage", ["stopped", "paused"])
def test_saving_a_link_without_redis_is_a_quick_503_that_keeps_the_result(
    client, settings, paused_redis, outage
):
    redis_at(
        settings, f"redis://127.0.0.1:{closed_port()}/0" if outage == "stopped" else paused_redis
    )
    response = finishes_within(20, lambda: client.post("/r/", {"query": "model=qwen2-7b"}))
    assert response.status_code == 503
    assert response["Retry-After"]
    body = response.content.decode()
    assert "Links cannot be saved right now" in body
    assert 'class="total"' in body  # the result is still on the page


def test_healthz_reports_the_cache(client, settings):
    redis_at(settings, f"redis://127.0.0.1:{closed_port()}/0")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "ok", "cache": "unreachable"}


def test_the_redis_clients_have_timeouts():
    # Structural: without these a paused Redis holds a worker until gunicorn kills it.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, config.settings as s; print(json.dumps(s.CACHES['default']['OPTIONS']))",
        ],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "DJANGO_SECRET_KEY": "x" * 50,
            "REDIS_URL": "redis://r:6379/0",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == {"socket_timeout": 1.0, "socket_connect_timeout": 1.0}


WSGI_PROBE = """
import json, sys, io
from config.wsgi import application
statuses = {}
for path in ("/api/v1/models", "/?model=qwen2-7b", "/healthz"):
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path.split("?")[0],
               "QUERY_STRING": path.partition("?")[2], "SERVER_NAME": "127.0.0.1",
               "SERVER_PORT": "80", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(),
               "wsgi.errors": sys.stderr, "HTTP_HOST": "127.0.0.1"}
    seen = {}
    def start(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, dict(headers)
    body = b"".join(application(environ, start))
    statuses[path] = [seen["status"], seen["headers"].get("Content-Type"), body.decode()[:200]]
print(json.dumps(statuses))
"""


def test_an_unreachable_database_is_a_quick_503_json_under_the_api():
    # A real outage: PostgreSQL on a port nothing listens on, in a process of its own.
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SECRET_KEY": "x" * 50,
        "DJANGO_HTTPS": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed_port()}/test",
    }
    done = subprocess.run(
        [sys.executable, "-c", WSGI_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    statuses = json.loads(done.stdout.strip().splitlines()[-1])
    status, content_type, body = statuses["/api/v1/models"]
    assert status.startswith("503")
    assert content_type.startswith("application/json")
    assert "database" in json.loads(body)["errors"][0]["message"]
    status, content_type, body = statuses["/?model=qwen2-7b"]
    assert status.startswith("503")
    assert content_type.startswith("text/html")
    assert statuses["/healthz"][0].startswith("503")

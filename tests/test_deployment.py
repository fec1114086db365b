"""compose.yaml: the deployment the README describes (replicas behind a proxy, one database,
one Redis, a release step, health checks). A Compose tool validates it where one is installed
(`docker compose` or Debian's `docker-compose`, neither of which needs a Docker engine for
`config`); the structure is checked everywhere."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


@pytest.mark.skipif(
    compose_command() is None and not os.environ.get("TEST_SERVICES"),
    reason="no docker compose / docker-compose here (make test-services installs one)",
)
def test_a_compose_tool_accepts_the_file(tmp_path):
    # An empty env file, so a developer's own .env plays no part.
    empty = tmp_path / "empty.env"
    empty.write_text("")
    tool = compose_command()
    assert tool is not None
    command = [*tool, "--env-file", str(empty), "-f", str(ROOT / "compose.yaml")]
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "x" * 50, "POSTGRES_PASSWORD": "p"}
    done = subprocess.run(
        [*command, "config", "-q"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    # Without the two secrets it refuses to start instead of running with none.
    refused = subprocess.run(
        [*command, "config", "-q"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert refused.returncode != 0


def test_two_web_replicas_share_one_database_and_one_redis_behind_the_proxy():
    assert set(SERVICES) == {"db", "redis", "release", "web", "proxy"}
    web = SERVICES["web"]
    assert web["deploy"]["replicas"] >= 2
    assert "ports" not in web  # only the proxy is published
    env = web["environment"]
    assert re.fullmatch(
        r"postgres://vram:\$\{POSTGRES_PASSWORD[^}]*\}@db:5432/vram", env["DATABASE_URL"]
    )
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["DJANGO_PROXY_COUNT"] == "1"  # nginx is the one proxy in front
    assert SERVICES["proxy"]["ports"] == ["${HTTP_PORT:-8080}:80"]


def test_the_release_step_runs_before_the_replicas_start():
    release = SERVICES["release"]
    command = " ".join(release["command"])
    for step in ("migrate --noinput", "createcachetable", "load_presets"):
        assert f"python manage.py {step}" in command
    assert release["depends_on"]["db"]["condition"] == "service_healthy"
    needs = SERVICES["web"]["depends_on"]
    assert needs["release"]["condition"] == "service_completed_successfully"
    assert needs["db"]["condition"] == needs["redis"]["condition"] == "service_healthy"
    assert SERVICES["proxy"]["depends_on"]["web"]["condition"] == "service_healthy"


def test_every_long_running_service_has_a_health_check():
    for name in ("db", "redis", "web", "proxy"):
        assert SERVICES[name]["healthcheck"]["test"][0] == "CMD", name
    assert "http://127.0.0.1:8000/healthz" in SERVICES["web"]["healthcheck"]["test"]


def test_the_proxy_config_balances_over_the_web_service():
    mount = SERVICES["proxy"]["volumes"][0]
    source = mount.split(":")[0]
    conf = (ROOT / source).read_text()
    assert re.search(r"upstream web \{\s*server web:8000;", conf)
    assert "proxy_pass http://web;" in conf
    # Overwritten, not appended to, so a client cannot choose its own rate-limit address.
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in conf


def test_the_wsgi_module_freezes_what_lives_as_long_as_the_worker():
    """gunicorn imports config.wsgi in each worker: the views and the estimator come with it,
    and every object then alive is moved out of the garbage collector's full collections."""
    import gc
    import sys

    frozen_before = gc.get_freeze_count()
    sys.modules.pop("config.wsgi", None)
    try:
        import config.wsgi  # noqa: F401

        assert "calculator.web.views" in sys.modules
        assert "calculator.estimator" in sys.modules
        assert gc.get_freeze_count() > frozen_before + 10_000  # the modules' objects, at least
    finally:
        gc.unfreeze()

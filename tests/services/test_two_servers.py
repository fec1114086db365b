"""Two servers, as on two machines behind a load balancer: separate gunicorn processes on
different ports sharing one PostgreSQL database and one Redis (issue 16).

Runs under `make test-services`, which always provides both services (its own, if the
machine's are not running) and sets TEST_SERVICES=1; there a missing service is a failure,
not a skip.
"""

import itertools
import os
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.conf import settings

from tests.conftest import clear_redis_prefix
from tests.services.servers import (
    admin_login,
    form_fields,
    manage,
    prepare_database,
    request,
    server_env,
    start_server,
)

pytestmark = pytest.mark.skipif(
    os.environ.get("TEST_SERVICES") != "1",
    reason="needs PostgreSQL and Redis: run `make test-services`, which provides both",
)

ADMIN_PASSWORD = "services-admin-password-1234"


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory):
    base_url = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    assert base_url.startswith("postgres"), "make test-services must set DATABASE_URL=postgres://"
    assert redis_url, "make test-services must set REDIS_URL"
    base = urllib.parse.urlsplit(base_url)
    name = f"{base.path.lstrip('/')}_servers"
    admin_url = base._replace(path="/postgres").geturl()
    servers_url = base._replace(path=f"/{name}").geturl()
    prefix = f"{os.environ.get('DJANGO_CACHE_KEY_PREFIX', 'vram')}-servers-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    data = tmp_path_factory.mktemp("servers")
    env = server_env(
        DJANGO_DATA_DIR=str(data),
        DATABASE_URL=servers_url,
        REDIS_URL=redis_url,
        DJANGO_CACHE_KEY_PREFIX=prefix,
        DJANGO_SUPERUSER_PASSWORD=ADMIN_PASSWORD,
    )
    servers = []
    try:
        prepare_database(env)
        manage(env, "createsuperuser", "--noinput", "--username", "boss", "--email", "b@x.org")
        servers = [start_server(env, data / f"gunicorn-{n}.log", workers=2) for n in (1, 2)]
        yield servers, env
    finally:
        for server in servers:
            server.stop()
        clear_redis_prefix(redis_url, prefix)
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_saved_link_limit_holds_across_both_servers(two_servers):
    (first, second), _ = two_servers
    limit = settings.SAVED_RESULT_RATE_PER_HOUR
    assert limit == 30  # the default the issue measured against
    ports = itertools.cycle([first.port, second.port])
    targets = [next(ports) for _ in range(35)]

    def save(port: int) -> int:
        return request(port, "POST", "/r/", {"query": "model=gpt2"}).status

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(save, targets))
    # 35 saves from one address, alternating servers: 30 saved, the 5 beyond the limit refused.
    assert sorted(statuses) == [302] * 30 + [429] * 5
    assert first.errors() == second.errors() == []


def test_an_admin_edit_through_one_server_is_served_by_the_other(two_servers):
    (first, second), env = two_servers
    with psycopg.connect(env["DATABASE_URL"]) as connection:
        row = connection.execute(
            "SELECT id, name FROM calculator_gpuspec WHERE slug = 'rtx-4090-24gb'"
        ).fetchone()
    assert row is not None
    gpu_id, old_name = row
    # The other server has read (and memoised, and cached the page for) the old catalogue.
    before = request(second.port, "GET", "/")
    assert before.status == 200
    assert old_name in before.body

    cookies = admin_login(first.port, "boss", ADMIN_PASSWORD)
    change = f"/admin/calculator/gpuspec/{gpu_id}/change/"
    page = request(first.port, "GET", change, cookies=cookies)
    assert page.status == 200
    fields = form_fields(page.body, "gpuspec_form")
    assert fields["name"] == old_name
    new_name = f"Renamed GPU {uuid.uuid4().hex[:6]}"
    fields.update(name=new_name, _save="Save")
    saved = request(first.port, "POST", change, fields, cookies)
    assert saved.status == 302, saved.body[:3000]

    after = request(second.port, "GET", "/")
    assert after.status == 200
    assert new_name in after.body
    assert first.errors() == second.errors() == []


def test_a_short_load_split_across_both_servers_has_no_error(two_servers):
    (first, second), _ = two_servers
    pages = [
        f"/?model=gpt2&batch={batch}&seq={seq}" for batch in (1, 2, 4, 8) for seq in (1024, 4096)
    ]
    pages += ["/", "/fits/?model=gpt2", "/healthz", "/api/v1/gpus"]
    jobs = [(port, path) for port in (first.port, second.port) for path in pages] * 10

    def get(job: tuple[int, str]) -> int:
        return request(job[0], "GET", job[1]).status

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(get, jobs))
    assert len(statuses) == 240
    assert set(statuses) == {200}
    assert first.errors() == second.errors() == []

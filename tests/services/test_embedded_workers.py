"""`make run`'s setup with no extra service: two gunicorn workers on SQLite and the database
cache share one rate limit (issue 16: each worker used to count alone, letting 60 through)."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings

from tests.services.servers import prepare_database, request, server_env, start_server


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    data = tmp_path_factory.mktemp("embedded")
    env = server_env(DJANGO_DATA_DIR=str(data), DATABASE_URL=None, REDIS_URL=None)
    prepare_database(env)
    server = start_server(env, data / "gunicorn.log", workers=2)
    yield server
    server.stop()


def test_thirty_five_saves_from_one_address_get_exactly_the_hourly_limit(two_workers):
    limit = settings.SAVED_RESULT_RATE_PER_HOUR
    assert limit == 30  # the default the issue measured against

    def save(_: int) -> int:
        return request(two_workers.port, "POST", "/r/", {"query": "model=gpt2"}).status

    # Sent 8 at a time, so both workers count at once.
    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(save, range(35)))
    # 30 saved (a redirect to the new link), the 5 beyond the limit refused.
    assert sorted(statuses) == [302] * 30 + [429] * 5
    assert two_workers.errors() == []


def test_a_short_load_over_both_workers_has_no_error(two_workers):
    """Both workers write rendered pages into the one SQLite file at once (the database cache),
    which must wait for the other's write, never fail with "database is locked"."""
    pages = [
        f"/?model=gpt2&batch={batch}&seq={seq}"
        for batch in range(1, 9)
        for seq in (1024, 2048, 4096)
    ]
    pages += ["/", "/fits/?model=gpt2", "/healthz", "/api/v1/gpus"]
    jobs = pages * 4  # each page computed once, then served from the shared cache

    def get(path: str) -> int:
        return request(two_workers.port, "GET", path).status

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(get, jobs))
    assert len(statuses) == 112
    assert set(statuses) == {200}
    assert two_workers.errors() == []

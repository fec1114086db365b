"""Rate limits shared by workers: counted atomically in the database, or in Redis when REDIS_URL
is set (as under `make test-services`, which runs this file against both real services)."""

import threading
import time

import pytest
from django.db import connection

from calculator.catalogue.models import RateCounter
from calculator.catalogue.ratelimit import rate_limit_count, rate_limit_within

pytestmark = pytest.mark.django_db(transaction=True)


def test_thirty_five_requests_against_a_limit_of_thirty_let_thirty_through():
    allowed = [
        rate_limit_within(bucket="save", client="10.0.0.1", limit=30, window_seconds=3600)
        for _ in range(35)
    ]
    # Hand count: requests 1..30 are within a limit of 30, requests 31..35 are not.
    assert allowed == [True] * 30 + [False] * 5


def test_clients_and_buckets_are_counted_apart():
    counts = [
        rate_limit_count(bucket="save", client="10.0.0.1", window_seconds=60),
        rate_limit_count(bucket="save", client="10.0.0.1", window_seconds=60),
        rate_limit_count(bucket="save", client="10.0.0.2", window_seconds=60),
        rate_limit_count(bucket="other", client="10.0.0.1", window_seconds=60),
    ]
    assert counts == [1, 2, 1, 1]


def test_a_new_window_starts_from_one_after_the_last_has_passed():
    for _ in range(3):
        rate_limit_count(bucket="save", client="10.0.0.3", window_seconds=1)
    time.sleep(1.2)
    assert rate_limit_count(bucket="save", client="10.0.0.3", window_seconds=1) == 1
    assert rate_limit_count(bucket="save", client="10.0.0.3", window_seconds=1) == 2


def test_concurrent_counting_loses_no_request():
    """8 threads, each with its own database connection, count 25 requests each at once.

    A read-then-write counter (what Django's database cache does for incr) loses some of the
    200 increments when two threads read the same value; an atomic one ends at exactly 200
    and hands out every count from 1 to 200 exactly once.
    """
    threads, per_thread = 8, 25
    barrier = threading.Barrier(threads)
    seen: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            mine = [
                rate_limit_count(bucket="race", client="10.0.0.4", window_seconds=3600)
                for _ in range(per_thread)
            ]
            with lock:
                seen.extend(mine)
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            connection.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert errors == []
    assert sorted(seen) == list(range(1, threads * per_thread + 1))


def test_finished_windows_are_removed_when_a_new_one_opens(settings):
    settings.REDIS_URL = ""  # the database counter only
    rate_limit_count(bucket="save", client="10.0.0.5", window_seconds=1)
    time.sleep(1.2)
    rate_limit_count(bucket="save", client="10.0.0.6", window_seconds=60)
    assert list(RateCounter.objects.values_list("slot", flat=True)) == ["save:10.0.0.6"]

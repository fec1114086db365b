"""Fixed-window rate limits shared by every worker and every machine.

A window opens at a client's first request in a bucket and lasts ``window_seconds``; every
request in it adds one to a counter, in one atomic step, so concurrent workers can never both
read 29 and both write 30. The counter lives in Redis when ``REDIS_URL`` is set (``SET NX EX``
and ``INCR`` in one MULTI transaction) and otherwise in the ``RateCounter`` table (one
``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` statement, on SQLite 3.35+ or PostgreSQL).
Django's cache API is not enough here: its database backend implements ``incr`` as a read
followed by a write.

When the counter's store does not answer (Redis down, or slower than
``DJANGO_REDIS_TIMEOUT_SECONDS``; the database unreachable), ``RateLimitUnavailable`` is raised
at once: a limit that cannot be counted is not waved through, and the views answer 503.
"""

from __future__ import annotations

import functools
import time

import redis
from django.conf import settings
from django.db import DatabaseError, connection

from calculator.catalogue.models import RateCounter


class RateLimitUnavailable(Exception):
    """The store of the counters did not answer: the request cannot be counted."""


def rate_limit_within(*, bucket: str, client: str, limit: int, window_seconds: int) -> bool:
    """Count one request of ``client`` in ``bucket``; whether it is within ``limit`` per window."""
    return rate_limit_count(bucket=bucket, client=client, window_seconds=window_seconds) <= limit


def rate_limit_count(*, bucket: str, client: str, window_seconds: int) -> int:
    """Count one request; how many this client made in its current window, this one included."""
    slot = f"{bucket}:{client}"[:255]  # the column's length; addresses are far shorter
    try:
        if settings.REDIS_URL:
            return _redis_count(
                settings.REDIS_URL, f"{settings.CACHE_KEY_PREFIX}:rate:{slot}", window_seconds
            )
        return _database_count(slot, window_seconds)
    except (redis.RedisError, DatabaseError, OSError) as error:
        raise RateLimitUnavailable(str(error)) from error


@functools.cache
def _redis_client(url: str) -> redis.Redis:
    # Without timeouts a paused Redis holds a worker until gunicorn kills it (30 s).
    timeout = settings.REDIS_TIMEOUT_SECONDS
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def _redis_count(url: str, key: str, window_seconds: int) -> int:
    pipeline = _redis_client(url).pipeline(transaction=True)
    pipeline.set(key, 0, ex=window_seconds, nx=True)  # opens the window, with its expiry
    pipeline.incr(key)  # keeps the expiry
    _, count = pipeline.execute()
    return int(count)


def _database_count(slot: str, window_seconds: int) -> int:
    now = time.time()
    table = connection.ops.quote_name(RateCounter._meta.db_table)
    # Both SET expressions read the row as it was before this statement.
    sql = (
        f"INSERT INTO {table} (slot, count, expires_unix_s) VALUES (%s, 1, %s) "
        f"ON CONFLICT (slot) DO UPDATE SET "
        f"count = CASE WHEN {table}.expires_unix_s <= %s THEN 1 ELSE {table}.count + 1 END, "
        f"expires_unix_s = CASE WHEN {table}.expires_unix_s <= %s "
        f"THEN excluded.expires_unix_s ELSE {table}.expires_unix_s END "
        f"RETURNING count"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [slot, now + window_seconds, now, now])
        row = cursor.fetchone()
    count = int(row[0])
    if count == 1:
        # A new window: the moment to forget other clients' finished ones.
        RateCounter.objects.filter(expires_unix_s__lt=now).delete()
    return count

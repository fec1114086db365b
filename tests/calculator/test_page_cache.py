"""The shared page cache (calculator/web/page_cache.py): keyed by what a page is computed from,
never by the raw request, and never a reason for a page to fail.

Findings 2, 7 and 14 of the security review of 654b6a2: a junk key (``z=<random>``) missed the
cache on every request of the dearest page; a ``Host: localhost`` request put localhost links
into the page everyone else was served; an unreachable cache turned pages into 500s.
"""

from unittest import mock

import pytest
from django.core.cache import cache

from calculator.web import page_cache, views

pytestmark = pytest.mark.django_db


def test_unknown_keys_and_other_spellings_find_the_same_fits_page(client):
    with mock.patch.object(views, "_fits", wraps=views._fits) as computed:
        first = client.get("/fits/", {"seq": "4096", "z": "1"})
        again = client.get("/fits/", {"seq": "04096", "z": "2", "zz": "x"})
        defaults = client.get("/fits/")  # 4096 is the default context
    assert computed.call_count == 1
    assert first.content == again.content == defaults.content


def test_unknown_keys_find_the_same_calculator_page(client):
    # A page is written to the shared cache the second time a worker renders it (views.
    # _seen_before); from then on no worker renders it again, whatever junk is added.
    with mock.patch.object(views, "_index", wraps=views._index) as computed:
        for junk in ("1", "2", "3", "4"):
            response = client.get("/", {"model": "qwen2-7b", "z": junk})
            assert response.status_code == 200
    assert computed.call_count == 2


def test_the_host_a_page_was_rendered_for_is_part_of_its_key(client):
    for _ in range(3):  # seen twice: now in the shared cache for this host
        client.get("/", {"model": "qwen2-7b"}, HTTP_HOST="localhost")
    visitor = client.get("/", {"model": "qwen2-7b"}, HTTP_HOST="127.0.0.1").content.decode()
    assert 'hreflang="es" href="http://127.0.0.1/es/?model=qwen2-7b"' in visitor
    assert "http://localhost" not in visitor


def test_junk_keys_are_not_repeated_in_the_page_served_to_others(client):
    body = client.get("/", {"model": "qwen2-7b", "utm_evil": "x"}).content.decode()
    assert "utm_evil" not in body


def test_a_failing_cache_serves_pages_without_it_and_is_left_alone_for_a_while(client):
    with (
        mock.patch.object(cache, "get", side_effect=ConnectionError("down")) as reads,
        mock.patch.object(cache, "set", side_effect=ConnectionError("down")),
    ):
        statuses = [
            client.get("/fits/").status_code,
            client.get("/", {"model": "gpt2"}).status_code,
        ]
    assert statuses == [200, 200]
    # The first failure opened the breaker: the second page did not try the store again.
    assert reads.call_count == 1


def test_the_cache_is_asked_again_once_the_pause_is_over(client, monkeypatch):
    with mock.patch.object(cache, "get", side_effect=ConnectionError("down")):
        client.get("/fits/")
    monkeypatch.setattr(page_cache, "_unavailable_until", 0.0)  # RETRY_SECONDS later
    with mock.patch.object(cache, "get", return_value=b"<p>cached</p>") as reads:
        assert client.get("/fits/").content == b"<p>cached</p>"
    assert reads.call_count == 1

"""One client address for every per-client limit and for the admin lockout (calculator/
clients.py).

Finding 3 of the security review of 654b6a2: behind the documented proxy
(``DJANGO_PROXY_COUNT=1``; nginx overwrites X-Forwarded-For with ``$remote_addr``), django-axes
counted the proxy's address, so five wrong passwords from anyone locked every admin out.
"""

import pytest
from axes.models import AccessAttempt  # type: ignore[import-untyped]
from django.contrib.auth.models import User
from django.test import RequestFactory

from calculator.catalogue.clients import client_address, client_key

pytestmark = pytest.mark.django_db
PROXY = "127.0.0.1"  # every request reaches the app from nginx


def login(client, password: str, forwarded_for: str, agent: str = "Firefox/140"):
    return client.post(
        "/admin/login/",
        {"username": "boss", "password": password},
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR=forwarded_for,
        HTTP_USER_AGENT=agent,
    )


def test_behind_the_proxy_one_clients_failures_lock_out_only_that_client(client, settings):
    settings.PROXY_COUNT = 1
    User.objects.create_superuser("boss", "boss@example.com", "right-password-123")
    # The review's attacker rotated its User-Agent, so only the address lockout applies
    # (AXES_LOCKOUT_PARAMETERS: the address, or the username with the same User-Agent).
    for attempt in range(6):
        login(client, "wrong", "10.7.0.99", agent=f"curl/8.{attempt}")
    assert login(client, "right-password-123", "10.7.0.99", agent="curl/9").status_code == 429
    admin = login(client, "right-password-123", "10.8.0.5")
    assert admin.status_code == 302  # logged in: redirected to the admin index
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"10.7.0.99"}


def test_without_a_proxy_setting_a_forwarded_header_is_ignored(settings):
    settings.PROXY_COUNT = 0
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert client_address(request) == "10.0.0.9"


def test_a_forwarded_entry_that_is_no_address_is_not_trusted(settings):
    settings.PROXY_COUNT = 1
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR="unknown")
    assert client_address(request) == PROXY


def test_an_ipv6_client_is_counted_by_its_64_network(settings):
    # RFC 6177: a site gets a /64 or more; every address in it is the same client.
    factory = RequestFactory()
    one = factory.get("/", REMOTE_ADDR="2001:db8:1:2:aaaa::1")
    other = factory.get("/", REMOTE_ADDR="2001:db8:1:2:ffff:1:2:3")
    assert client_key(one) == client_key(other) == "2001:db8:1:2::/64"
    assert client_key(factory.get("/", REMOTE_ADDR="::ffff:10.1.2.3")) == "10.1.2.3"

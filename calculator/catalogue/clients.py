"""Who a request comes from: the address every per-client limit counts, and the owner key of
what a client stores.

One rule for the saved-link, pasted-config and Hub-import limits and for the admin lockout
(django-axes reads ``client_address`` through ``AXES_CLIENT_IP_CALLABLE``), so that behind the
documented proxy they all count the visitor, never the proxy.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest

# An IPv6 client is given a whole /64 by its provider (RFC 6177 §3): counting addresses within
# it would let one client count as 2⁶⁴.
IPV6_CLIENT_PREFIX = 64


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str:
    """The visitor's IP address: with ``DJANGO_PROXY_COUNT`` trusted proxies in front, the
    entry of X-Forwarded-For that the outermost of them added (what the client itself wrote
    there is ignored); without proxies, or when that entry is not an address, the
    connection's address."""
    proxies = settings.PROXY_COUNT
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if len(hops) >= proxies:
            address = _address(hops[-proxies])
            if address is not None:
                return str(address)
    return str(request.META.get("REMOTE_ADDR", "") or "0.0.0.0")


def client_key(request: HttpRequest) -> str:
    """What the per-client limits count: the address, or an IPv6 address's /64 network."""
    text = client_address(request)
    address = _address(text)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return str(ipaddress.IPv6Network(f"{address}/{IPV6_CLIENT_PREFIX}", strict=False))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return text


def owner_key(request: HttpRequest) -> str:
    """The key stored with a row a client created (a keyed hash of ``client_key``, so the
    database keeps no address): a client's own quota may drop its own rows, never others'."""
    digest = hmac.new(settings.SECRET_KEY.encode(), client_key(request).encode(), hashlib.sha256)
    return digest.hexdigest()[:32]

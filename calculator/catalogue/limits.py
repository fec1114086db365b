"""Per-client limits of what a request may start: one fixed-window counter per client and
bucket, shared by every worker and machine (calculator.catalogue.ratelimit), counted on the client key
every limit shares (calculator.catalogue.clients)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext as _

from calculator.catalogue import ratelimit
from calculator.catalogue.clients import client_key
from calculator.catalogue.hub import HubError


def hub_import_allowed(request: HttpRequest) -> Callable[[], None]:
    """The check a Hub import runs before it fetches: ``HUB_IMPORT_RATE_PER_HOUR`` imports per
    client and hour (a stored repository costs nothing; only a new fetch counts)."""

    def check() -> None:
        try:
            within = within_rate(request, "hub", settings.HUB_IMPORT_RATE_PER_HOUR, 3600)
        except ratelimit.RateLimitUnavailable as error:
            raise HubError(
                "unavailable",
                _(
                    "Models from the Hugging Face Hub cannot be looked up right now. Try again in a minute, or paste the model's config.json."
                ),
            ) from error
        if not within:
            raise HubError(
                "limited",
                _(
                    "You have looked up many new models on the Hugging Face Hub in the last hour. Try again later, or paste the model's config.json."
                ),
            )

    return check


def within_rate(request: HttpRequest, bucket: str, limit: int, window_seconds: int) -> bool:
    """A fixed-window counter per client, shared by all workers and machines
    (calculator.catalogue.ratelimit; raises ``RateLimitUnavailable`` when its store does not answer)."""
    return ratelimit.rate_limit_within(
        bucket=bucket, client=client_key(request), limit=limit, window_seconds=window_seconds
    )

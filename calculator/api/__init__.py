"""The API room: /api/v1 (django-ninja), the page's calculation as JSON, with its OpenAPI
description. It may import every other room (web for the page's permalink form, result,
catalogue, inputs, estimator); nothing imports it but the URL configuration and the CLI."""

from calculator.api.v1 import api

__all__ = ["api"]

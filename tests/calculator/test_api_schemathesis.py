"""Property-based run of the served OpenAPI description (schemathesis): no 5xx, no response
that breaks its own schema, no schema-violating request accepted. Bounded: MAX_EXAMPLES per
operation: three operations take parameters, so about 3,000 requests in all.

Excluded check: "schema-valid request rejected". The schema cannot express every semantic rule
(a config.json must describe a model; tensor_parallel must divide num_gpus), so such requests
get a 4xx with the field named, which is the behaviour we want."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from config.wsgi import application

MAX_EXAMPLES = 1000

# Generating the description touches no database, so it is loaded once at import.
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """What Django's test client does: without it the WSGI handler closes the database
    connection after each request, in the middle of the test's transaction (SQLite in memory
    ignores that; a database file or PostgreSQL does not)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
@pytest.mark.django_db
def test_api_never_errors_and_keeps_its_schema(case):
    response = case.call()
    assert response.status_code < 500, response.text
    case.validate_response(response, excluded_checks=[positive_data_acceptance])

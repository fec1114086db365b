"""Property-based run of the served OpenAPI description (schemathesis): no 5xx, no response
that breaks its own schema, no schema-violating request accepted. Bounded: MAX_EXAMPLES per
operation, after schemathesis's coverage cases.

Excluded check: "schema-valid request rejected". The schema cannot express every semantic rule
(a config.json must describe a model; tensor_parallel must divide num_gpus), so such requests
get a 4xx with the field named, which is the behaviour we want."""

import json
from collections import Counter

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.core.error_feedback import ErrorFeedbackStore
from schemathesis.core.error_feedback.collector import record_response
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.generation.hypothesis.examples import generate_one
from schemathesis.specs.openapi.checks import positive_data_acceptance

from config.wsgi import application

MAX_EXAMPLES = 1000
POST_ESTIMATE = "POST /api/v1/estimate"

# Generating the description touches no database, so it is loaded once at import.
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)

# Cases run per operation ("POST /api/v1/estimate"), counted by the fuzz test.
CASES_RUN: Counter[str] = Counter()


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
    CASES_RUN[case.operation.label] += 1
    response = case.call()
    assert response.status_code < 500, response.text
    case.validate_response(response, excluded_checks=[positive_data_acceptance])


def test_the_estimate_body_was_fuzzed():
    """The main endpoint's body was generated, not skipped as ungeneratable (the security
    review's CLI run stopped at "Cannot generate test data" for it). Reads the count of the
    test above, which pytest runs first, in file order."""
    if not CASES_RUN:
        pytest.skip("the fuzz test did not run in this session")
    assert CASES_RUN[POST_ESTIMATE] >= MAX_EXAMPLES


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        # The review's case: a custom MoE without experts_per_token, whose 422 said
        # "experts_per_token is required" for the field "model.custom".
        {"model": {"params_billion": 7, "num_experts": 8}},
        {"model": {}},
        {"model": {"params_billion": 1e18}},
        {"model": {"config": 3}},
        {"model": {"config": {"model_type": "llama"}}},
        {
            "model": {
                "num_layers": 2,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_kv_heads": 5,
            }
        },
        {"model": {"preset": ""}},
        {"model": {"params_billion": 7}, "lora": {"targets": []}},
    ],
)
def test_our_error_answers_leave_the_body_generatable(body):
    """What the schemathesis CLI does between two runs of an operation (error feedback, which
    its pytest plugin leaves out): read each 4xx's field and message as a rule of the schema
    ("… is required" makes the field a required string), then generate from the amended
    schema. Each of these answers must leave something to generate."""
    operation = schema["/api/v1/estimate"]["POST"]
    store = ErrorFeedbackStore()
    case = operation.Case(body=body, media_type="application/json")
    response = case.call()
    assert 400 <= response.status_code < 500, response.text
    record_response(store=store, operation=operation, case=case, response=response)
    store.checkpoint()

    strategy = operation.as_strategy(feedback=FeedbackSources(error_feedback=store))
    assert isinstance(json.dumps(generate_one(strategy).body), str)

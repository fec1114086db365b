"""config/wsgi.py: what gunicorn runs, beyond Django's own handler."""

import io
import json
import sys

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from config.wsgi import application

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """As Django's test client does: the WSGI handler would otherwise close the connection
    in the middle of the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def call(body: bytes, headers: dict[str, str]) -> tuple[str, bytes]:
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/estimate",
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),  # gunicorn hands the app the de-chunked body
        "wsgi.errors": sys.stderr,
        "wsgi.input_terminated": True,
        **headers,
    }
    seen: dict[str, str] = {}

    def start_response(status, response_headers, exc_info=None):
        seen["status"] = status

    content = b"".join(application(environ, start_response))
    return seen["status"], content


def test_a_chunked_request_body_is_read():
    # Finding 18: a valid chunked request was read as empty ("field": "", "Field required").
    body = json.dumps({"model": {"preset": "qwen2-7b"}}).encode()
    headers = {"HTTP_TRANSFER_ENCODING": "chunked", "CONTENT_TYPE": "application/json"}
    status, content = call(body, headers)
    assert status.startswith("200"), content[:300]
    assert json.loads(content)["preset"] == "qwen2-7b"


def test_a_chunked_body_past_the_upload_limit_is_a_413(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    status, _ = call(b"{" + b" " * 2000 + b"}", {"HTTP_TRANSFER_ENCODING": "chunked"})
    assert status.startswith("413")

import gc
import io
import os
from collections.abc import Callable, Iterable
from importlib import import_module
from typing import Any

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def with_chunked_bodies(app: WsgiApp) -> WsgiApp:
    """Give a ``Transfer-Encoding: chunked`` request its body. gunicorn de-chunks it into
    ``wsgi.input`` but sets no ``CONTENT_LENGTH``, and Django reads a body only up to that
    length: a chunked JSON request reached the API as an empty body. The body is read here
    up to the upload limit (413 past it), as Django would read one with a length."""

    def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
        if chunked and not environ.get("CONTENT_LENGTH"):
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 512 * 1024
            body = environ["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                start_response("413 Request Entity Too Large", [("Content-Type", "text/plain")])
                return [b"Request body too large."]
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return application


application = with_chunked_bodies(get_wsgi_application())

# Import the views, the estimator and the forms now rather than at the first request, then move
# every object that exists (about 110,000: modules, classes, translations) out of the garbage
# collector's reach: they live as long as the worker. Without this, each full collection walked
# them all, an 80-190 ms pause every thousand or so recomputes (issue 16).
import_module(settings.ROOT_URLCONF)
gc.freeze()

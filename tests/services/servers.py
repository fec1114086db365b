"""Real gunicorn servers for the multi-worker tests: set up a database, start, talk HTTP, stop.

Loopback only. The servers run the production settings module's test variant (plain static
file storage, so no collectstatic is needed) against whatever DATABASE_URL / REDIS_URL the
caller passes; everything else comes from the environment the tests run in.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.cookies import SimpleCookie
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def server_env(**overrides: str | None) -> dict[str, str]:
    """The environment for manage.py and gunicorn; a value of None removes the variable."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings_test",
        DJANGO_SECRET_KEY="services-test-key-not-used-anywhere-else-0123456789",
        DJANGO_DEBUG="0",
        DJANGO_HTTPS="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_LOG_LEVEL="WARNING",
    )
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def manage(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def prepare_database(env: dict[str, str]) -> None:
    """What a release step does: tables, the cache table, the catalogue."""
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "createcachetable")
    manage(env, "load_presets")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def errors(self) -> list[str]:
        """Lines of the server's log that report a failure."""
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if "Traceback" in line or " ERROR " in line]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(env: dict[str, str], log: Path, workers: int = 1) -> Server:
    port = free_port()
    handle = log.open("wb")
    process = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--limit-request-line",
            "8190",
        ],
        cwd=ROOT,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
    )
    server = Server(port, process, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}: {log.read_text()}")
        try:
            if request(port, "GET", "/healthz").status == 200:
                return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"gunicorn on port {port} did not answer /healthz: {log.read_text()}")


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: str
    cookies: dict[str, str] = field(default_factory=dict)


def request(
    port: int,
    method: str,
    path: str,
    form: dict[str, str] | None = None,
    cookies: dict[str, str] | None = None,
) -> Response:
    """One HTTP request, redirects not followed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": "127.0.0.1"}
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if cookies:
        headers["Cookie"] = "; ".join(f"{key}={value}" for key, value in cookies.items())
    try:
        connection.request(method, path, body=body, headers=headers)
        raw = connection.getresponse()
        text = raw.read().decode(errors="replace")
        jar: dict[str, str] = {}
        for header in raw.headers.get_all("Set-Cookie") or []:
            parsed = SimpleCookie()
            parsed.load(header)
            jar.update({key: morsel.value for key, morsel in parsed.items()})
        return Response(raw.status, dict(raw.getheaders()), text, jar)
    finally:
        connection.close()


class FormFields(HTMLParser):
    """The values a browser would submit for the first form with a given id."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id = form_id
        self.inside = False
        self.fields: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside or ("name" not in a and tag != "option"):
            return
        if tag == "input" and a.get("type") not in {"submit", "button", "file"}:
            if a.get("type") in {"checkbox", "radio"} and "checked" not in a:
                return
            self.fields[a["name"]] = a.get("value", "on" if a.get("type") == "checkbox" else "")
        elif tag == "select":
            self._select = a["name"]
            self.fields.setdefault(a["name"], "")
        elif tag == "option" and self._select and "selected" in a:
            self.fields[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea = a["name"]
            self.fields[a["name"]] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea:
            # Browsers drop the newline that may follow <textarea>.
            self.fields[self._textarea] = self.fields[self._textarea].removeprefix("\n")
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.fields[self._textarea] += data


def form_fields(html: str, form_id: str) -> dict[str, str]:
    parser = FormFields(form_id)
    parser.feed(html)
    return parser.fields


def admin_login(port: int, username: str, password: str) -> dict[str, str]:
    """Log in through the admin's own form; the session and CSRF cookies."""
    page = request(port, "GET", "/admin/login/")
    cookies = dict(page.cookies)
    fields = form_fields(page.body, "login-form")
    fields.update(username=username, password=password)
    done = request(port, "POST", "/admin/login/?next=/admin/", fields, cookies)
    assert done.status == 302, done.body[:2000]
    cookies.update(done.cookies)
    return cookies

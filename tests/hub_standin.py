"""A local stand-in for the Hugging Face Hub: the endpoints ``calculator/catalogue/hub.py`` calls, answered
in the Hub's format, so tests run without a network.

What it serves follows what huggingface_hub 2.x requests and expects (read in its source,
``hf_api.py`` ``model_info``/``parse_safetensors_file_metadata``, ``file_download.py``
``hf_hub_url``/``get_hf_file_metadata``, ``utils/_http.py`` ``hf_raise_for_status``):

- ``GET /api/models/{org}/{name}``: the model info JSON (``id``, ``sha``, ``gated``, and the
  ``safetensors`` summary ``{"parameters": {dtype: count}, "total": n}`` when given).
- ``GET|HEAD /{org}/{name}/resolve/{revision}/{file}``: the file, with ``X-Repo-Commit``,
  ``ETag`` and ``Content-Length``; a ``Range: bytes=a-b`` request gets ``206`` and that slice
  (how safetensors headers are read).
- Errors carry the Hub's ``X-Error-Code`` header: ``RepoNotFound`` (404), ``EntryNotFound``
  (404), ``GatedRepo`` (401 without a token).

A repository can also misbehave the way a hostile or broken Hub would (``Repo.hostile``, per
answer: ``"info"`` or a file name): answer late, trickle its body one byte at a time, send a
body of any size without holding it in memory, with or without ``Content-Length``, or redirect
anywhere. ``Repo.info`` and ``Repo.info_without`` change the model info (another canonical
``id``, no ``id``, odd values). Every request's headers are kept (``HubStandIn.headers``) and
the body bytes sent for each path counted (``HubStandIn.sent``).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> tuple[bytes, int]:
    """The start of a safetensors file (format spec: an 8-byte little-endian header length,
    then the JSON header naming each tensor's dtype, shape and byte offsets), and the number of
    data bytes that follow it."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "F8_E4M3": 1}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        end = offset + count * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, end]}
        offset = end
    encoded = json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded, offset


def safetensors_file(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A whole safetensors file, its data zero-filled."""
    header, data_bytes = safetensors_header(tensors)
    return header + bytes(data_bytes)


@dataclass(frozen=True)
class Hostile:
    """How one answer misbehaves."""

    delay_seconds: float = 0.0  # before the status line
    body_delay_seconds: float = 0.0  # after the headers, before the body
    trickle_seconds: float = 0.0  # the body one byte at a time, this long apart
    size: int | None = None  # a body of this many bytes instead: `{`, spaces, `}`
    chunked: bool = False  # no Content-Length: Transfer-Encoding chunked
    redirect: str | None = None  # answer 302 with this Location
    headers: tuple[tuple[str, str], ...] = ()  # sent as well


@dataclass
class Repo:
    files: dict[str, bytes]
    safetensors: dict[str, int] | None = None  # the info endpoint's summary, per dtype
    gated: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # keys of the model info replaced
    info_without: tuple[str, ...] = ()  # keys of the model info left out
    hostile: dict[str, Hostile] = field(default_factory=dict)  # by "info" or file name

    @property
    def sha(self) -> str:
        return hashlib.sha1(b"".join(sorted(self.files.values()))).hexdigest()


@dataclass
class HubStandIn:
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # lower-case names
    sent: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    url: str = ""

    def add(self, repo_id: str, repo: Repo) -> Repo:
        self.repos[repo_id] = repo
        return repo

    def requests_for(self, repo_id: str) -> list[tuple[str, str]]:
        return [(method, path) for method, path in self.requests if repo_id in path]


_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_INFO = re.compile(r"^/api/models/([^/]+/[^/]+?)(?:/revision/[^/]+)?$")


def _handler(hub: HubStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _send(
            self,
            status: int,
            payload: bytes,
            headers: dict[str, str],
            body: bool = True,
            hostile: Hostile | None = None,
        ) -> None:
            hostile = hostile or Hostile()
            if hostile.redirect is not None:
                status, payload, headers = 302, b"", {"Location": hostile.redirect}
                hostile = Hostile()
            time.sleep(hostile.delay_seconds)
            self.send_response(status)
            for name, value in [*headers.items(), *hostile.headers]:
                self.send_header(name, value)
            if hostile.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                length = len(payload) if hostile.size is None else hostile.size
                self.send_header("Content-Length", str(length))
            self.end_headers()
            if not body:
                return
            try:
                time.sleep(hostile.body_delay_seconds)
                for piece in _pieces(payload, hostile):
                    time.sleep(hostile.trickle_seconds)
                    if hostile.chunked:
                        piece = b"%x\r\n%s\r\n" % (len(piece), piece)
                    self.wfile.write(piece)
                    hub.sent[self.path] += len(piece)
                if hostile.chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                # The client stopped reading: what a bounded reader should do.
                self.close_connection = True

        def _error(self, status: int, code: str, message: str, body: bool, **extra: str) -> None:
            payload = json.dumps({"error": message}).encode()
            headers = {"Content-Type": "application/json", "X-Error-Code": code}
            headers["X-Error-Message"] = message
            self._send(status, payload, {**headers, **extra}, body)

        def _answer(self, body: bool) -> None:
            path = self.path.split("?", 1)[0]
            hub.requests.append((self.command, self.path))
            hub.headers.append({name.lower(): value for name, value in self.headers.items()})
            if match := _INFO.match(path):
                repo = hub.repos.get(match.group(1))
                if repo is None:
                    self._error(404, "RepoNotFound", "Repository not found", body)
                    return
                info: dict[str, Any] = {
                    "_id": repo.sha[:24],
                    "id": match.group(1),
                    "sha": repo.sha,
                    "gated": "manual" if repo.gated else False,
                    "private": False,
                }
                if repo.safetensors is not None:
                    info["safetensors"] = {
                        "parameters": repo.safetensors,
                        "total": sum(repo.safetensors.values()),
                    }
                info.update(repo.info)
                for key in repo.info_without:
                    info.pop(key, None)
                payload = json.dumps(info).encode()
                headers = {"Content-Type": "application/json"}
                self._send(200, payload, headers, body, repo.hostile.get("info"))
                return
            if match := _RESOLVE.match(path):
                repo_id, _revision, filename = match.groups()
                repo = hub.repos.get(repo_id)
                if repo is None:
                    self._error(404, "RepoNotFound", "Repository not found", body)
                    return
                if repo.gated and "authorization" not in {k.lower() for k in self.headers}:
                    self._error(
                        401,
                        "GatedRepo",
                        f"Access to model {repo_id} is restricted. You must have access to it "
                        "and be authenticated to access it. Please log in.",
                        body,
                    )
                    return
                if filename not in repo.files:
                    self._error(
                        404, "EntryNotFound", "Entry not found", body, **{"X-Repo-Commit": repo.sha}
                    )
                    return
                content = repo.files[filename]
                headers = {
                    "X-Repo-Commit": repo.sha,
                    "ETag": f'"{hashlib.sha1(content).hexdigest()}"',
                    "Content-Type": "application/octet-stream",
                    "Accept-Ranges": "bytes",
                }
                status = 200
                if (ranged := re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))) and (
                    body
                ):
                    start = int(ranged.group(1))
                    end = min(int(ranged.group(2) or len(content) - 1), len(content) - 1)
                    headers["Content-Range"] = f"bytes {start}-{end}/{len(content)}"
                    content = content[start : end + 1]
                    status = 206
                self._send(status, content, headers, body, repo.hostile.get(filename))
                return
            self._error(404, "NotFound", "Not found", body)

    return Handler


def _pieces(payload: bytes, hostile: Hostile) -> Iterator[bytes]:
    if hostile.size is not None:
        # Made while sent, so that a 300 MiB answer costs the stand-in no memory.
        remaining = hostile.size - 2
        yield b"{"
        while remaining > 0:
            yield b" " * min(remaining, 1 << 16)
            remaining -= 1 << 16
        yield b"}"
    elif hostile.trickle_seconds:
        yield from (payload[i : i + 1] for i in range(len(payload)))
    elif payload:
        yield payload


class Server:
    def __init__(self, hub: HubStandIn) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
        self.httpd.daemon_threads = True
        host, port = self.httpd.server_address[:2]
        hub.url = f"http://{host!s}:{port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

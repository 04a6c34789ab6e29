"""Fixtures for the client tests, which run against a live facecompute service.

test/clients.test.ts starts `facecompute serve`, gets a key and runs pytest with:
  FACECOMPUTE_URL, FACECOMPUTE_API_KEY  the gateway and a REST key with a large allowance
  FC_TEST_IMAGES                        DeepFace's test images (../shared/data/deepface)
  FC_TEST_NO_FACE                       an image without a face
  FC_TEST_METRICS_URL                   the gateway's Prometheus listener (which /compare path ran)
A missing variable fails the run: these tests never skip.
"""
from __future__ import annotations

import base64
import http.server
import os
import threading
from pathlib import Path
from typing import Callable, Iterator, List, Tuple

import pytest


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through test/clients.test.ts (npx tap test/clients.test.ts)")
    return value


@pytest.fixture(scope="session")
def base_url() -> str:
    return _env("FACECOMPUTE_URL")


@pytest.fixture(scope="session")
def api_key() -> str:
    return _env("FACECOMPUTE_API_KEY")


@pytest.fixture(scope="session")
def images() -> Path:
    return Path(_env("FC_TEST_IMAGES"))


@pytest.fixture(scope="session")
def no_face() -> Path:
    return Path(_env("FC_TEST_NO_FACE"))


@pytest.fixture(scope="session")
def metrics_url() -> str:
    return _env("FC_TEST_METRICS_URL")


@pytest.fixture(scope="session")
def client(base_url: str, api_key: str) -> Iterator["object"]:
    from facecompute import Client

    with Client(base_url, api_key) as c:
        yield c


def data_uri(path: Path) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(path.read_bytes()).decode()


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet
        pass


@pytest.fixture(scope="session")
def file_server(images: Path) -> Iterator[str]:
    """DeepFace's images over HTTP on loopback, for URL inputs the client fetches itself."""
    handler = lambda *a, **kw: _Files(*a, directory=str(images), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


Answer = Tuple[int, dict, bytes]


class Stub:
    """A scripted HTTP server: answers requests in order from `answers`, recording each request's
    arrival time and path. Used to test retries without the real service."""

    def __init__(self, answers: List[Answer]) -> None:
        self.answers = list(answers)
        self.requests: List[Tuple[float, str, str]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                import time

                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                stub.requests.append((time.monotonic(), self.command, self.path))
                status, headers, body = stub.answers.pop(0) if stub.answers else (500, {}, b'{"error":"internal_error","detail":"stub ran out of answers"}')
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def stub() -> Iterator[Callable[[List[Answer]], Stub]]:
    made: List[Stub] = []

    def make(answers: List[Answer]) -> Stub:
        s = Stub(answers)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()

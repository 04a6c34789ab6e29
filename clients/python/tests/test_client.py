"""Client and AsyncClient against a live service: every operation with every input form, binary
compare on the streaming path, typed errors, and retries against a scripted stub."""
from __future__ import annotations

import asyncio
import base64
import contextlib
import http.server
import io
import json
import re
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator

import numpy as np
import pytest
from PIL import Image

import facecompute
from facecompute import AsyncClient, Client, errors
from facecompute._png import encode_bgr_png

from conftest import data_uri

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def bgr(path: Path) -> np.ndarray:
    """What cv2.imread gives, without OpenCV: Pillow decodes (libjpeg-turbo, as the service), then RGB -> BGR."""
    return np.asarray(Image.open(path).convert("RGB"))[:, :, ::-1].copy()


# Every image form the client takes, each built from the same file.
FORMS = {
    "str path": lambda p, url: str(p),
    "pathlib.Path": lambda p, url: p,
    "bytes": lambda p, url: p.read_bytes(),
    "file object": lambda p, url: open(p, "rb"),
    "BytesIO": lambda p, url: io.BytesIO(p.read_bytes()),
    "numpy BGR array": lambda p, url: bgr(p),
    "data URI": lambda p, url: data_uri(p),
    "raw base64": lambda p, url: base64.b64encode(p.read_bytes()).decode(),
    "URL": lambda p, url: f"{url}/{p.name}",
}


@pytest.fixture(scope="module")
def reference(client: Client, images: Path) -> Dict[str, Any]:
    return {
        "verify": client.verify(images / "img1.jpg", images / "img2.jpg"),
        "embedding": client.represent(images / "img1.jpg")["results"][0]["embedding"],
    }


def test_capabilities(client: Client) -> None:
    caps = client.capabilities()
    assert {"Facenet", "Dlib"} <= set(caps["allowed_models"])
    assert caps["default_model"] == "Facenet"
    assert caps["embedding_dims"]["Facenet"] == 128
    assert client.capabilities() is caps  # cached
    assert client.capabilities(refresh=True) == caps


def test_client_reads_url_and_key_from_the_environment(monkeypatch: pytest.MonkeyPatch, base_url: str, api_key: str, images: Path) -> None:
    monkeypatch.setenv("FACECOMPUTE_URL", base_url)
    monkeypatch.setenv("FACECOMPUTE_API_KEY", api_key)
    with Client() as c:
        assert c.base_url == base_url
        assert c.represent(images / "img1.jpg")["results"][0]["facial_area"]["w"] > 0


@pytest.mark.parametrize("form", list(FORMS))
def test_verify_every_image_form(client: Client, images: Path, file_server: str, reference: Dict[str, Any], form: str) -> None:
    make = FORMS[form]
    r = client.verify(make(images / "img1.jpg", file_server), make(images / "img2.jpg", file_server))
    ref = reference["verify"]
    assert r["verified"] is True
    assert abs(r["distance"] - ref["distance"]) <= 1e-6, form
    assert r["facial_areas"] == ref["facial_areas"]


@pytest.mark.parametrize("form", list(FORMS))
def test_represent_every_image_form(client: Client, images: Path, file_server: str, reference: Dict[str, Any], form: str) -> None:
    r = client.represent(FORMS[form](images / "img1.jpg", file_server))
    assert len(r["results"]) == 1
    got = r["results"][0]["embedding"]
    assert len(got) == 128
    assert max(abs(a - b) for a, b in zip(got, reference["embedding"])) <= 1e-6, form


def test_verify_with_precomputed_embeddings_as_lists_and_numpy(client: Client, images: Path, reference: Dict[str, Any]) -> None:
    e1 = reference["embedding"]
    e2 = client.represent(images / "img2.jpg")["results"][0]["embedding"]
    for a, b in ((e1, e2), (np.asarray(e1), np.asarray(e2, dtype=np.float32).astype(np.float64))):
        r = client.verify(a, b)
        assert abs(r["distance"] - reference["verify"]["distance"]) <= 1e-6
        assert r["facial_areas"]["img1"]["x"] is None
    # an embedding beside an image, in one multipart body
    r = client.verify(e1, images / "img2.jpg")
    assert abs(r["distance"] - reference["verify"]["distance"]) <= 1e-6


def test_verify_options_reach_the_service(client: Client, images: Path) -> None:
    r = client.verify(images / "img1.jpg", images / "img3.jpg", model_name="Dlib", detector_backend="retinaface", distance_metric="euclidean_l2", threshold=0.5)
    assert (r["model"], r["detector_backend"], r["similarity_metric"], r["threshold"]) == ("Dlib", "retinaface", "euclidean_l2", 0.5)
    assert r["facial_areas"]["img1"]["detector"] == "retinaface"
    assert "nose" in r["facial_areas"]["img1"]


def test_represent_batches(client: Client, images: Path) -> None:
    paths = [images / "img1.jpg", images / "couple.jpg", images / "img3.jpg"]
    mixed = [paths[0], paths[1].read_bytes(), data_uri(paths[2])]  # file parts and a text part, in order
    r = client.represent(mixed)
    assert [len(faces) for faces in r["results"]] == [1, 2, 1]
    stacked = np.stack([bgr(images / "img1.jpg")] * 2)  # a 4-D array is a batch, as in DeepFace
    assert [len(f) for f in client.represent(stacked)["results"]] == [1, 1]
    one = client.represent([paths[0]])  # a list of one is still a batch
    assert len(one["results"]) == 1 and isinstance(one["results"][0], list)
    assert len(client.represent(paths[1], max_faces=1)["results"]) == 1


def test_represent_numpy_output_and_l2(client: Client, images: Path, reference: Dict[str, Any]) -> None:
    r = client.represent(images / "img1.jpg", numpy=True)
    emb = r["results"][0]["embedding"]
    assert isinstance(emb, np.ndarray) and emb.dtype == np.float32 and emb.shape == (128,)
    assert np.allclose(emb, reference["embedding"], atol=1e-6)
    unit = client.represent(images / "img1.jpg", l2_normalize=True)["results"][0]["embedding"]
    assert abs(sum(x * x for x in unit) - 1) < 1e-6


def _streamed(metrics_url: str) -> Dict[str, float]:
    text = urllib.request.urlopen(f"{metrics_url}/metrics").read().decode()
    out = {"streamed": 0.0, "contiguous": 0.0}
    for m in re.finditer(r'facecompute_gateway_compare_binary_targets_total\{path="(\w+)"\} (\S+)', text):
        out[m.group(1)] = float(m.group(2))
    return out


def test_compare_sends_binary_targets_on_the_streaming_path(client: Client, reference: Dict[str, Any], metrics_url: str) -> None:
    rng = np.random.default_rng(7)
    targets = rng.normal(size=(5000, 128)).astype(np.float32)
    targets[1234] = np.asarray(reference["embedding"], dtype=np.float32)
    before = _streamed(metrics_url)
    r = client.compare(reference["embedding"], targets, top_k=3)
    after = _streamed(metrics_url)
    assert r["results"][0]["index"] == 1234
    assert r["results"][0]["verified"] is True
    assert len(r["results"]) == 3 and r["dims"] == 128 and r["model"] == "Facenet"
    assert after["streamed"] == before["streamed"] + 1, "the fields came before the targets part: the rows were compared as they arrived"
    assert after["contiguous"] == before["contiguous"]
    # The same answer from a list of lists and from raw float32 bytes.
    small = targets[1200:1300]
    want = client.compare(reference["embedding"], small, top_k=2)["results"]
    assert client.compare(np.asarray(reference["embedding"]), small.tolist(), top_k=2)["results"] == want
    assert client.compare(reference["embedding"], small.astype("<f4").tobytes(), top_k=2)["results"] == want


def test_compare_with_an_image_source_and_many_sources(client: Client, images: Path, reference: Dict[str, Any]) -> None:
    emb2 = client.represent(images / "img2.jpg")["results"][0]["embedding"]
    targets = np.asarray([emb2, reference["embedding"]], dtype=np.float32)
    r = client.compare(images / "img1.jpg", targets)
    assert [x["index"] for x in r["results"]] == [0, 1]
    assert r["source"]["facial_area"]["w"] > 0
    assert r["results"][1]["distance"] <= 1e-6
    many = client.compare([reference["embedding"], emb2], targets, top_k=1)
    assert [res[0]["index"] for res in many["results"]] == [1, 0]


def test_errors_are_typed_with_code_detail_status_and_request_id(client: Client, base_url: str, images: Path, no_face: Path) -> None:
    with pytest.raises(errors.NoFaceDetectedError) as e:
        client.represent(no_face, detector_fallback=False)
    err = e.value
    assert isinstance(err, errors.UnprocessableEntityError) and isinstance(err, facecompute.FacecomputeError)
    assert (err.code, err.status) == ("no_face_detected", 422)
    assert "Face could not be detected" in err.detail
    assert UUID.match(err.request_id or "")
    mine = "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3"
    with pytest.raises(errors.BadRequestError) as e:
        client.verify(images / "img1.jpg", images / "img2.jpg", model_name="VGG-Face", request_id=mine)
    assert (e.value.code, e.value.status, e.value.request_id) == ("model_not_allowed", 400, mine)
    with pytest.raises(errors.BadRequestError) as e:
        client.represent(images / "invalid.jpg")
    assert e.value.code == "invalid_image"
    with Client(base_url, "fc_live_not_a_key") as bad:
        with pytest.raises(errors.AuthenticationError) as e:
            bad.represent(images / "img1.jpg")
    assert (e.value.code, e.value.status) == ("invalid_api_key", 401)
    with Client(base_url, "") as none:
        with pytest.raises(errors.AuthenticationError) as e:
            none.represent(images / "img1.jpg")
    assert e.value.code == "missing_api_key"


def test_enforce_detection_false_gives_the_whole_image(client: Client, no_face: Path) -> None:
    r = client.represent(no_face, enforce_detection=False, detector_fallback=False)
    area = r["results"][0]["facial_area"]
    assert (area["x"], area["y"]) == (0, 0) and r["results"][0]["face_confidence"] == 0


def test_urls_can_be_left_to_the_service(base_url: str, api_key: str, file_server: str) -> None:
    # This deployment has remote images off: the URL reached the service as a string and was refused there.
    with Client(base_url, api_key, remote_images="service") as c:
        with pytest.raises(errors.BadRequestError) as e:
            c.represent(f"{file_server}/img1.jpg")
    assert e.value.code == "input_mode_disabled"


def test_bad_inputs_fail_before_sending(client: Client, images: Path) -> None:
    with pytest.raises(FileNotFoundError):
        client.represent(str(images / "no-such-file.jpg"))
    with pytest.raises(TypeError):
        client.represent(np.zeros((8, 8, 3), dtype=np.float32))
    with pytest.raises(TypeError):
        client.represent(io.StringIO("text"))
    with pytest.raises(ValueError):
        client.compare([0.0] * 128, [[0.0] * 128, [0.0] * 127])


def test_async_client(base_url: str, api_key: str, images: Path, reference: Dict[str, Any], file_server: str) -> None:
    async def run() -> None:
        async with AsyncClient(base_url, api_key) as c:
            caps = await c.capabilities()
            assert caps["default_model"] == "Facenet"
            v, rep = await asyncio.gather(
                c.verify(images / "img1.jpg", f"{file_server}/img2.jpg"),
                c.represent(bgr(images / "img1.jpg")),
            )
            assert abs(v["distance"] - reference["verify"]["distance"]) <= 1e-6
            assert max(abs(a - b) for a, b in zip(rep["results"][0]["embedding"], reference["embedding"])) <= 1e-6
            cmp = await c.compare(reference["embedding"], np.asarray([reference["embedding"]] * 3, dtype=np.float32), top_k=1)
            assert cmp["results"][0]["distance"] <= 1e-6
            with pytest.raises(errors.BadRequestError) as e:
                await c.represent(images / "img1.jpg", model_name="Nope")
            assert e.value.code in ("model_not_allowed", "invalid_request")

    asyncio.run(run())


OK = json.dumps({"results": [], "model": "Facenet", "detector_backend": "opencv"}).encode()


def err(code: str, detail: str = "x") -> bytes:
    return json.dumps({"error": code, "detail": detail}).encode()


def test_retry_honours_retry_after_on_429(stub: Any) -> None:
    s = stub([(429, {"retry-after": "1", "x-request-id": "r1"}, err("rate_limited")), (200, {}, OK)])
    with Client(s.url, "k", backoff=0.01) as c:
        t0 = time.monotonic()
        assert c.represent(b"\xff\xd8\xff fake")["model"] == "Facenet"
    assert len(s.requests) == 2
    gap = s.requests[1][0] - s.requests[0][0]
    assert gap >= 0.95, f"waited {gap:.3f}s, Retry-After said 1s"
    assert time.monotonic() - t0 < 5


def test_retry_on_retryable_503_with_backoff_and_http_date(stub: Any) -> None:
    s = stub([(503, {}, err("queue_full")), (503, {"retry-after": "0"}, err("service_warming")), (200, {}, OK)])
    with Client(s.url, "k", backoff=0.05) as c:
        c.represent(b"img")
    assert len(s.requests) == 3
    s2 = stub([(503, {}, err("upstream_something_else")), (200, {}, OK)])
    with Client(s2.url, "k", backoff=0.01) as c:
        with pytest.raises(errors.ServiceUnavailableError):
            c.represent(b"img")
    assert len(s2.requests) == 1, "a 503 without Retry-After and not a capacity code is not retried"


@pytest.mark.parametrize("status,code,cls", [(400, "invalid_request", errors.BadRequestError), (401, "invalid_api_key", errors.AuthenticationError), (402, "insufficient_credits", errors.InsufficientCreditsError), (403, "account_inactive", errors.PermissionDeniedError), (404, "not_found", errors.NotFoundError), (413, "image_too_large", errors.PayloadTooLargeError), (422, "url_fetch_failed", errors.UnprocessableEntityError), (422, "no_face_detected", errors.NoFaceDetectedError), (502, "upstream_lost", errors.InternalServerError)])
def test_never_retries_other_errors(stub: Any, status: int, code: str, cls: type) -> None:
    s = stub([(status, {"retry-after": "0"}, err(code, "nope")), (200, {}, OK)])
    with Client(s.url, "k", backoff=0.01) as c:
        with pytest.raises(cls) as e:
            c.represent(b"img")
    assert (e.value.status, e.value.code, e.value.detail) == (status, code, "nope")
    assert len(s.requests) == 1


@pytest.mark.parametrize("status,code", [(500, "internal_error"), (502, "upstream_failed"), (504, "upstream_timeout")])
def test_retries_the_catalogs_retryable_server_errors_with_backoff(stub: Any, status: int, code: str) -> None:
    """Issue 39: the error catalog says to retry these with backoff; the wait is jittered, never 0."""
    s = stub([(status, {}, err(code)), (status, {}, err(code)), (200, {}, OK)])
    with Client(s.url, "k", backoff=0.1) as c:
        assert c.represent(b"img")["model"] == "Facenet"
    assert len(s.requests) == 3
    gaps = [s.requests[i + 1][0] - s.requests[i][0] for i in range(2)]
    assert 0.05 <= gaps[0] and 0.1 <= gaps[1], f"equal-jitter backoff: at least half of 0.1 s then 0.2 s, got {gaps}"
    s2 = stub([(status, {}, err(code))] * 3)
    with Client(s2.url, "k", backoff=0.01) as c:
        with pytest.raises(errors.FacecomputeError) as e:
            c.with_options(max_retries=1).represent(b"img")
    assert e.value.code == code and len(s2.requests) == 2, "with_options(max_retries=1): one retry"


def test_gives_up_after_max_retries_and_on_a_long_retry_after(stub: Any) -> None:
    s = stub([(429, {"retry-after": "0"}, err("rate_limited"))] * 5)
    with Client(s.url, "k", max_retries=2) as c:
        with pytest.raises(errors.RateLimitError) as e:
            c.represent(b"img")
    assert len(s.requests) == 3 and e.value.retry_after == 0
    s2 = stub([(429, {"retry-after": "3600"}, err("rate_limited")), (200, {}, OK)])
    with Client(s2.url, "k", max_retry_wait=10) as c:
        t0 = time.monotonic()
        with pytest.raises(errors.RateLimitError) as e:
            c.represent(b"img")
    assert e.value.retry_after == 3600 and len(s2.requests) == 1 and time.monotonic() - t0 < 2


def test_async_retries_the_same_way(stub: Any) -> None:
    s = stub([(429, {"retry-after": "1"}, err("rate_limited")), (200, {}, OK), (400, {}, err("invalid_request")), (200, {}, OK)])

    async def run() -> None:
        async with AsyncClient(s.url, "k") as c:
            await c.represent(b"img")
            with pytest.raises(errors.BadRequestError):
                await c.represent(b"img")

    asyncio.run(run())
    assert len(s.requests) == 3
    assert s.requests[1][0] - s.requests[0][0] >= 0.95


def test_a_non_json_error_is_still_typed(stub: Any) -> None:
    s = stub([(502, {}, b"<html>bad gateway</html>")])
    with Client(s.url, "k") as c:
        with pytest.raises(errors.InternalServerError) as e:
            c.capabilities()
    assert e.value.code == "http_502" and "bad gateway" in e.value.detail


def test_connection_refused_is_an_api_connection_error() -> None:
    with Client("http://127.0.0.1:9", "k", max_retries=1, backoff=0.01) as c:
        with pytest.raises(errors.APIConnectionError):
            c.capabilities()


@pytest.mark.parametrize("shape", [(7, 5), (7, 5, 1), (7, 5, 3), (7, 5, 4), (1, 1, 3), (300, 400, 3)])
def test_png_writer_is_lossless(shape: tuple) -> None:
    a = np.random.default_rng(sum(shape)).integers(0, 256, size=shape, dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(encode_bgr_png(a))))
    if len(shape) == 3 and shape[2] == 3:
        decoded = decoded[:, :, ::-1]  # RGB -> BGR
    elif len(shape) == 3 and shape[2] == 4:
        decoded = decoded[:, :, [2, 1, 0, 3]]
    assert np.array_equal(decoded, a.reshape(decoded.shape))


def test_readme_defaults_and_dependencies() -> None:
    """What clients/python/README.md states: retry defaults, httpx as the only dependency, NumPy optional."""
    import inspect
    import subprocess
    import sys
    import tomllib

    for cls in (Client, AsyncClient):
        params = inspect.signature(cls).parameters
        assert (params["max_retries"].default, params["backoff"].default, params["max_retry_wait"].default) == (3, 0.5, 60.0)
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0].split("=")[0] for d in project["dependencies"]] == ["httpx"]
    assert project["optional-dependencies"]["numpy"][0].startswith("numpy")
    # Without NumPy importable, the client loads and builds a body from a path.
    code = "import sys; sys.modules['numpy'] = None\nimport facecompute\nfrom facecompute._calls import encode\nfrom facecompute.client import verify_call\nprint(len(encode(verify_call(sys.argv[1], [0.5, 0.25], {}))['files']))"
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__))], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "2", out.stderr


@contextlib.contextmanager
def slow_server(seconds: float) -> Iterator[str]:
    """A loopback server that answers every GET after ``seconds``; yields its URL."""

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(seconds)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_a_timeout_is_an_api_timeout_error() -> None:
    """A request that gets no answer within ``timeout`` raises APITimeoutError (an APIConnectionError)."""
    with slow_server(2) as url:
        with Client(url, "k", timeout=60) as c:
            t0 = time.monotonic()
            with pytest.raises(errors.APITimeoutError) as e:
                c.with_options(timeout=0.3).capabilities()
            assert c._config.timeout == 60, "with_options leaves the client as it was"
        assert isinstance(e.value, errors.APIConnectionError) and e.value.code == "timeout"
        assert time.monotonic() - t0 < 1.5, "the per-call timeout, not the client's 60 s"


def test_a_user_abort_is_an_api_user_abort_error(stub: Any) -> None:
    """The caller's cancel event aborts a wait between retries (Client, from another thread) and a
    request in flight (AsyncClient): APIUserAbortError, code ``aborted``, an APIConnectionError."""

    s = stub([(429, {"retry-after": "30"}, err("rate_limited")), (200, {}, OK)])
    with Client(s.url, "k") as c:
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        t0 = time.monotonic()
        with pytest.raises(errors.APIUserAbortError) as e:
            c.with_options(cancel=cancel).represent(b"img")
        assert time.monotonic() - t0 < 5, "aborted during the 30 s Retry-After wait"
        assert isinstance(e.value, errors.APIConnectionError) and e.value.code == "aborted"
        assert len(s.requests) == 1, "not sent again"
        with pytest.raises(errors.APIUserAbortError):
            c.with_options(cancel=cancel).capabilities()  # already set: nothing is sent
        assert len(s.requests) == 1

    async def run(url: str) -> float:
        async with AsyncClient(url, "k", timeout=60) as ac:
            stop = asyncio.Event()
            asyncio.get_running_loop().call_later(0.3, stop.set)
            t0 = time.monotonic()
            with pytest.raises(errors.APIUserAbortError) as e:
                await ac.with_options(cancel=stop).capabilities()
            assert e.value.code == "aborted"
            return time.monotonic() - t0

    with slow_server(3) as url:
        assert asyncio.run(run(url)) < 2, "aborted in flight, not after the 3 s answer"

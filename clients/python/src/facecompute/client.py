"""``Client`` and ``AsyncClient``: the service's four operations over httpx.

httpx because it gives one API in both flavours (``httpx.Client`` and ``httpx.AsyncClient``), pooled
keep-alive connections, per-phase timeouts, multipart bodies written in the order we give, and a
mock transport for tests; it is maintained (encode/httpx) and pure Python. The two classes share
everything but the sending loop: the bodies (_calls.py), the inputs (_inputs.py), the retry policy
(_retry.py) and the error mapping (errors.py).
"""
from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import itertools
import json
import os
import threading
import time
import uuid
from typing import Any, Dict, List, Mapping, Optional, Union, cast

import httpx

from . import _inputs
from ._calls import BinaryTargets, Call, CompareSource, encode
from ._inputs import FileImage, RemoteImage, TextImage
from ._retry import RetryPolicy, backoff_delay, delay_for, parse_retry_after
from ._version import __version__
from .types import CapabilitiesResponse, CompareResponse, RepresentResponse, VerifyResponse
from .errors import APIConnectionError, APITimeoutError, APIUserAbortError, FacecomputeError, error_class

DEFAULT_BASE_URL = "http://localhost:8080"
#: The largest image the client downloads for a URL input (the service's default max_image_bytes).
DEFAULT_MAX_REMOTE_IMAGE_BYTES = 10 * 1024 * 1024

JSON = Dict[str, Any]


class _Config:
    def __init__(
        self,
        base_url: Optional[str],
        api_key: Optional[str],
        timeout: float,
        max_retries: int,
        backoff: float,
        max_retry_wait: float,
        remote_images: str,
        max_remote_image_bytes: int,
    ) -> None:
        self.base_url = (base_url or os.environ.get("FACECOMPUTE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("FACECOMPUTE_API_KEY")
        if remote_images not in ("fetch", "service"):
            raise ValueError(f"remote_images must be 'fetch' (the client downloads URLs) or 'service' (the service fetches them), not {remote_images!r}")
        self.remote_images = remote_images
        self.max_remote_image_bytes = max_remote_image_bytes
        self.timeout = timeout
        self.policy = RetryPolicy(max_retries=max_retries, backoff=backoff, max_wait=max_retry_wait)
        self.user_agent = f"facecompute-python/{__version__} httpx/{httpx.__version__}"
        #: The caller's cancel event (threading.Event for Client, asyncio.Event for AsyncClient), if any.
        self.cancel: Any = None

    def with_options(self, timeout: Optional[float], max_retries: Optional[int], cancel: Any = None) -> "_Config":
        cfg = copy.copy(self)
        if timeout is not None:
            cfg.timeout = timeout
        if max_retries is not None:
            cfg.policy = dataclasses.replace(self.policy, max_retries=max_retries)
        if cancel is not None:
            cfg.cancel = cancel
        return cfg

    def aborted(self, method: str, path: str, request_id: str) -> APIUserAbortError:
        return APIUserAbortError("aborted", f"{method} {self.base_url}{path}: aborted by the caller", request_id=request_id)

    def headers(self, request_id: Optional[str]) -> Dict[str, str]:
        h = {"user-agent": self.user_agent, "accept": "application/json", "x-request-id": request_id or str(uuid.uuid4())}
        if self.api_key:
            h["authorization"] = f"Bearer {self.api_key}"
        return h


def _options(**kw: Any) -> Dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def verify_call(img1: Any, img2: Any, options: Mapping[str, Any]) -> Call:
    call = Call("/verify")
    call.add("img1", _inputs.image_or_embedding(img1, "img1"))
    call.add("img2", _inputs.image_or_embedding(img2, "img2"))
    for k, v in options.items():
        call.add(k, v)
    return call


def represent_call(img: Any, options: Mapping[str, Any]) -> Call:
    call = Call("/represent")
    if isinstance(img, (list, tuple)):
        if not img:
            raise ValueError("img: an empty list")
        call.batch = True
        for i, one in enumerate(img):
            call.add("img", _inputs.image(one, f"img{i}"))
    elif _inputs.is_numpy(img) and img.ndim == 4:
        call.batch = True
        for i in range(img.shape[0]):
            call.add("img", _inputs.image(img[i], f"img{i}"))
    else:
        call.add("img", _inputs.image(img, "img"))
    for k, v in options.items():
        call.add(k, v)
    return call


def _compare_source(value: Any, name: str) -> CompareSource:
    return CompareSource(_inputs.image_or_embedding(value, name))


def compare_call(source: Any, targets: Any, options: Mapping[str, Any]) -> Call:
    call = Call("/compare")
    many = (_inputs.is_numpy(source) and source.ndim == 2) or (isinstance(source, (list, tuple)) and len(source) > 0 and not _inputs.is_embedding(source))
    if many:
        srcs = [_compare_source(s, f"source{i}") for i, s in enumerate(source)]
        # Several sources travel as one JSON text part: image bytes among them go as base64.
        srcs = [CompareSource(TextImage(base64.b64encode(s.value.data).decode())) if isinstance(s.value, FileImage) else s for s in srcs]
        call.add("source", srcs)
    else:
        call.add("source", _compare_source(source, "source"))
    # The fields the streaming path needs come before the targets part; top_k and the rest after.
    for k in ("model_name", "distance_metric"):
        call.add(k, options.get(k))
    data, _, _ = _inputs.float32_rows(targets)
    call.add("targets", BinaryTargets(data))
    for k, v in options.items():
        if k not in ("model_name", "distance_metric"):
            call.add(k, v)
    return call


def _decode_error(response: httpx.Response) -> FacecomputeError:
    request_id = response.headers.get("x-request-id")
    retry_after = parse_retry_after(response.headers)
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        code, detail = body["error"], str(body.get("detail", ""))
    else:
        code, detail = f"http_{response.status_code}", response.text[:500]
    cls = error_class(response.status_code, code)
    return cls(code, detail, status=response.status_code, request_id=request_id, retry_after=retry_after, body=body)


def _result(call: Call, response: httpx.Response) -> JSON:
    body = response.json()
    if call.batch and isinstance(body, dict):
        results = body.get("results")
        # A batch of one sent as one multipart part comes back as one image's faces.
        if isinstance(results, list) and all(isinstance(r, dict) for r in results):
            body["results"] = [results]
    return body  # type: ignore[no-any-return]


def _to_numpy(body: JSON) -> JSON:
    import numpy as np

    def conv(faces: List[JSON]) -> None:
        for f in faces:
            f["embedding"] = np.asarray(f["embedding"], dtype=np.float32)

    for r in body.get("results", []):
        if isinstance(r, list):
            conv(r)
        else:
            conv([r])
    return body


class _Download:
    """A URL input's bytes as they arrive, refused past ``limit`` (declared or counted)."""

    def __init__(self, url: str, response: httpx.Response, limit: int) -> None:
        if response.status_code != 200:
            raise FacecomputeError("url_fetch_failed", f"fetching {url} answered HTTP {response.status_code}")
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise FacecomputeError("image_too_large", f"{url} is {declared} bytes, over max_remote_image_bytes={limit}")
        self.url, self.limit, self.size = url, limit, 0
        self.chunks: List[bytes] = []

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise FacecomputeError("image_too_large", f"{self.url} is over max_remote_image_bytes={self.limit}")
        self.chunks.append(chunk)

    def image(self) -> FileImage:
        return _inputs.file_image(b"".join(self.chunks), "remote")


def _after_failed_connection(cfg: _Config, err: httpx.HTTPError, attempt: int, where: str, request_id: str) -> float:
    """Seconds to wait before trying again after a transport error, or raises it as APIConnectionError.
    Only a connection that failed before the request was sent is tried again."""
    if isinstance(err, (httpx.ConnectError, httpx.ConnectTimeout)) and attempt < cfg.policy.max_retries:
        return backoff_delay(cfg.policy, attempt)
    if isinstance(err, httpx.TimeoutException):
        raise APITimeoutError("timeout", f"{where}: no answer within the timeout ({err})", request_id=request_id) from err
    raise APIConnectionError("connection_failed", f"{where}: {err}", request_id=request_id) from err


def _answer(cfg: _Config, call: Optional[Call], response: httpx.Response, attempt: int) -> "tuple[Optional[JSON], float]":
    """A success's body, or (None, seconds to wait) for a retryable refusal; raises any other refusal."""
    if response.status_code < 400:
        return (_result(call, response) if call is not None else response.json()), 0.0
    error = _decode_error(response)
    wait = delay_for(cfg.policy, attempt, response.status_code, error.code, error.retry_after)
    if wait is None:
        raise error
    return None, wait


class Client:
    """A synchronous client. ``base_url`` and ``api_key`` default to FACECOMPUTE_URL and FACECOMPUTE_API_KEY.

    Retries 429, retryable 503s, 500 internal_error, 502 upstream_failed and 504 upstream_timeout up to ``max_retries`` times, waiting what Retry-After says (at
    most ``max_retry_wait`` seconds) or an exponential backoff from ``backoff`` seconds.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_retry_wait: float = 60.0,
        remote_images: str = "fetch",
        max_remote_image_bytes: int = DEFAULT_MAX_REMOTE_IMAGE_BYTES,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self._config = _Config(base_url, api_key, timeout, max_retries, backoff, max_retry_wait, remote_images, max_remote_image_bytes)
        self._http = httpx.Client(timeout=timeout, transport=transport)
        self._capabilities: Optional[JSON] = None

    @property
    def base_url(self) -> str:
        return self._config.base_url

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def with_options(self, *, timeout: Optional[float] = None, max_retries: Optional[int] = None, cancel: Optional[threading.Event] = None) -> "Client":
        """This client with another ``timeout`` (seconds) or ``max_retries`` for the calls made through
        the copy, e.g. ``client.with_options(timeout=5).verify(...)``; it shares the connection pool.
        ``cancel``: a ``threading.Event`` another thread may set to abort the calls (APIUserAbortError)
        before they are sent and during any wait between retries; a request already in flight runs to
        its answer or its timeout (``AsyncClient`` aborts that too)."""
        clone = copy.copy(self)
        clone._config = self._config.with_options(timeout, max_retries, cancel)
        return clone

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- operations ---------------------------------------------------------------------------

    def capabilities(self, *, refresh: bool = False) -> CapabilitiesResponse:
        """GET /capabilities: the models, detectors, metrics, thresholds and limits in force (cached)."""
        if self._capabilities is None or refresh:
            self._capabilities = self._send("GET", "/capabilities", {}, None)
        return cast(CapabilitiesResponse, self._capabilities)

    def verify(
        self,
        img1: Any,
        img2: Any,
        *,
        model_name: Optional[str] = None,
        detector_backend: Optional[str] = None,
        distance_metric: Optional[str] = None,
        threshold: Optional[float] = None,
        enforce_detection: Optional[bool] = None,
        align: Optional[bool] = None,
        expand_percentage: Optional[int] = None,
        normalization: Optional[str] = None,
        detector_fallback: Optional[bool] = None,
        anti_spoofing: Optional[bool] = None,
        request_id: Optional[str] = None,
    ) -> VerifyResponse:
        """POST /verify. Each image: a path, bytes, a binary file object, a NumPy BGR array, a data: URI,
        base64, a URL, or an embedding (list of numbers or 1-D NumPy array)."""
        opts = _options(model_name=model_name, detector_backend=detector_backend, distance_metric=distance_metric, threshold=threshold, enforce_detection=enforce_detection, align=align, expand_percentage=expand_percentage, normalization=normalization, detector_fallback=detector_fallback, anti_spoofing=anti_spoofing)
        return cast(VerifyResponse, self._call(verify_call(img1, img2, opts), request_id))

    def represent(
        self,
        img: Any,
        *,
        model_name: Optional[str] = None,
        detector_backend: Optional[str] = None,
        enforce_detection: Optional[bool] = None,
        align: Optional[bool] = None,
        expand_percentage: Optional[int] = None,
        normalization: Optional[str] = None,
        max_faces: Optional[int] = None,
        l2_normalize: Optional[bool] = None,
        detector_fallback: Optional[bool] = None,
        anti_spoofing: Optional[bool] = None,
        return_face: Optional[bool] = None,
        image_dtype: Optional[str] = None,
        numpy: bool = False,
        request_id: Optional[str] = None,
    ) -> RepresentResponse:
        """POST /represent. ``img`` is one image or a list of them (then ``results`` holds one list of
        faces per image). ``numpy=True`` gives each embedding as a float32 NumPy array.
        ``return_face=True`` adds each face's crop as base64 PNG (``face_png``). ``image_dtype="float"``
        (detector ``skip``): resize the image as floats, as DeepFace does for a float array."""
        opts = _options(model_name=model_name, detector_backend=detector_backend, enforce_detection=enforce_detection, align=align, expand_percentage=expand_percentage, normalization=normalization, max_faces=max_faces, l2_normalize=l2_normalize, detector_fallback=detector_fallback, anti_spoofing=anti_spoofing, return_face=return_face, image_dtype=image_dtype)
        body = self._call(represent_call(img, opts), request_id)
        return cast(RepresentResponse, _to_numpy(body) if numpy else body)

    def compare(
        self,
        source: Any,
        targets: Any,
        *,
        model_name: Optional[str] = None,
        distance_metric: Optional[str] = None,
        top_k: Optional[int] = None,
        threshold: Optional[float] = None,
        detector_backend: Optional[str] = None,
        enforce_detection: Optional[bool] = None,
        align: Optional[bool] = None,
        expand_percentage: Optional[int] = None,
        normalization: Optional[str] = None,
        detector_fallback: Optional[bool] = None,
        request_id: Optional[str] = None,
    ) -> CompareResponse:
        """POST /compare. ``source``: an image or an embedding, or a list of them; ``targets``: an
        N x dims NumPy array, a list of embeddings, or raw little-endian float32 bytes. The targets
        travel as the binary float32 part, after the fields that let the gateway stream them
        (``model_name`` defaults to the service's default model, ``distance_metric`` to cosine)."""
        if model_name is None:
            model_name = str(self.capabilities()["default_model"])
        opts = _options(model_name=model_name, distance_metric=distance_metric or "cosine", top_k=top_k, threshold=threshold, detector_backend=detector_backend, enforce_detection=enforce_detection, align=align, expand_percentage=expand_percentage, normalization=normalization, detector_fallback=detector_fallback)
        return cast(CompareResponse, self._call(compare_call(source, targets, opts), request_id))

    # -- transport ----------------------------------------------------------------------------

    def _call(self, call: Call, request_id: Optional[str]) -> JSON:
        remote = call.remote_images()
        if remote:
            call.replace_remote({r.url: self._resolve(r) for r in remote})
        return self._send("POST", call.path, encode(call), request_id, call)

    def _resolve(self, image: RemoteImage) -> Union[FileImage, TextImage]:
        if self._config.remote_images == "service":
            return TextImage(image.url)
        try:
            with self._http.stream("GET", image.url, follow_redirects=True, headers={"user-agent": self._config.user_agent}) as r:
                download = _Download(image.url, r, self._config.max_remote_image_bytes)
                for chunk in r.iter_bytes():
                    download.add(chunk)
        except httpx.HTTPError as err:
            raise APIConnectionError("url_fetch_failed", f"fetching {image.url} failed: {err}") from err
        return download.image()

    def _send(self, method: str, path: str, kwargs: Dict[str, Any], request_id: Optional[str], call: Optional[Call] = None) -> JSON:
        cfg = self._config
        headers = cfg.headers(request_id)
        headers.update(kwargs.pop("headers", {}))
        rid = headers["x-request-id"]

        def pause(seconds: float) -> None:
            if cfg.cancel is None:
                time.sleep(seconds)
            elif cfg.cancel.wait(seconds):
                raise cfg.aborted(method, path, rid)

        for attempt in itertools.count():
            if cfg.cancel is not None and cfg.cancel.is_set():
                raise cfg.aborted(method, path, rid)
            try:
                response = self._http.request(method, cfg.base_url + path, headers=headers, timeout=cfg.timeout, **kwargs)
            except httpx.HTTPError as err:
                pause(_after_failed_connection(cfg, err, attempt, f"{method} {cfg.base_url}{path}", rid))
                continue
            body, wait = _answer(cfg, call, response, attempt)
            if body is not None:
                return body
            pause(wait)
        raise AssertionError("unreachable")


class AsyncClient:
    """The asynchronous twin of :class:`Client` (``await client.verify(...)``), same arguments."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_retry_wait: float = 60.0,
        remote_images: str = "fetch",
        max_remote_image_bytes: int = DEFAULT_MAX_REMOTE_IMAGE_BYTES,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        self._config = _Config(base_url, api_key, timeout, max_retries, backoff, max_retry_wait, remote_images, max_remote_image_bytes)
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport)
        self._capabilities: Optional[JSON] = None

    @property
    def base_url(self) -> str:
        return self._config.base_url

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    def with_options(self, *, timeout: Optional[float] = None, max_retries: Optional[int] = None, cancel: Optional[asyncio.Event] = None) -> "AsyncClient":
        """This client with another ``timeout`` or ``max_retries`` for the calls made through the copy.
        ``cancel``: an ``asyncio.Event`` whose setting aborts the calls (APIUserAbortError) at once: before
        sending, in flight (the connection is dropped) or during a wait between retries."""
        clone = copy.copy(self)
        clone._config = self._config.with_options(timeout, max_retries, cancel)
        return clone

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def capabilities(self, *, refresh: bool = False) -> CapabilitiesResponse:
        if self._capabilities is None or refresh:
            self._capabilities = await self._send("GET", "/capabilities", {}, None)
        return cast(CapabilitiesResponse, self._capabilities)

    async def verify(self, img1: Any, img2: Any, *, model_name: Optional[str] = None, detector_backend: Optional[str] = None, distance_metric: Optional[str] = None, threshold: Optional[float] = None, enforce_detection: Optional[bool] = None, align: Optional[bool] = None, expand_percentage: Optional[int] = None, normalization: Optional[str] = None, detector_fallback: Optional[bool] = None, anti_spoofing: Optional[bool] = None, request_id: Optional[str] = None) -> VerifyResponse:
        opts = _options(model_name=model_name, detector_backend=detector_backend, distance_metric=distance_metric, threshold=threshold, enforce_detection=enforce_detection, align=align, expand_percentage=expand_percentage, normalization=normalization, detector_fallback=detector_fallback, anti_spoofing=anti_spoofing)
        return cast(VerifyResponse, await self._call(verify_call(img1, img2, opts), request_id))

    async def represent(self, img: Any, *, model_name: Optional[str] = None, detector_backend: Optional[str] = None, enforce_detection: Optional[bool] = None, align: Optional[bool] = None, expand_percentage: Optional[int] = None, normalization: Optional[str] = None, max_faces: Optional[int] = None, l2_normalize: Optional[bool] = None, detector_fallback: Optional[bool] = None, anti_spoofing: Optional[bool] = None, return_face: Optional[bool] = None, image_dtype: Optional[str] = None, numpy: bool = False, request_id: Optional[str] = None) -> RepresentResponse:
        opts = _options(model_name=model_name, detector_backend=detector_backend, enforce_detection=enforce_detection, align=align, expand_percentage=expand_percentage, normalization=normalization, max_faces=max_faces, l2_normalize=l2_normalize, detector_fallback=detector_fallback, anti_spoofing=anti_spoofing, return_face=return_face, image_dtype=image_dtype)
        body = await self._call(represent_call(img, opts), request_id)
        return cast(RepresentResponse, _to_numpy(body) if numpy else body)

    async def compare(self, source: Any, targets: Any, *, model_name: Optional[str] = None, distance_metric: Optional[str] = None, top_k: Optional[int] = None, threshold: Optional[float] = None, detector_backend: Optional[str] = None, enforce_detection: Optional[bool] = None, align: Optional[bool] = None, expand_percentage: Optional[int] = None, normalization: Optional[str] = None, detector_fallback: Optional[bool] = None, request_id: Optional[str] = None) -> CompareResponse:
        if model_name is None:
            model_name = str((await self.capabilities())["default_model"])
        opts = _options(model_name=model_name, distance_metric=distance_metric or "cosine", top_k=top_k, threshold=threshold, detector_backend=detector_backend, enforce_detection=enforce_detection, align=align, expand_percentage=expand_percentage, normalization=normalization, detector_fallback=detector_fallback)
        return cast(CompareResponse, await self._call(compare_call(source, targets, opts), request_id))

    async def _call(self, call: Call, request_id: Optional[str]) -> JSON:
        remote = call.remote_images()
        if remote:
            call.replace_remote({r.url: await self._resolve(r) for r in remote})
        return await self._send("POST", call.path, encode(call), request_id, call)

    async def _resolve(self, image: RemoteImage) -> Union[FileImage, TextImage]:
        if self._config.remote_images == "service":
            return TextImage(image.url)
        try:
            async with self._http.stream("GET", image.url, follow_redirects=True, headers={"user-agent": self._config.user_agent}) as r:
                download = _Download(image.url, r, self._config.max_remote_image_bytes)
                async for chunk in r.aiter_bytes():
                    download.add(chunk)
        except httpx.HTTPError as err:
            raise APIConnectionError("url_fetch_failed", f"fetching {image.url} failed: {err}") from err
        return download.image()

    async def _send(self, method: str, path: str, kwargs: Dict[str, Any], request_id: Optional[str], call: Optional[Call] = None) -> JSON:
        cfg = self._config
        headers = cfg.headers(request_id)
        headers.update(kwargs.pop("headers", {}))
        rid = headers["x-request-id"]
        for attempt in itertools.count():
            try:
                response = await self._abortable(self._http.request(method, cfg.base_url + path, headers=headers, timeout=cfg.timeout, **kwargs), method, path, rid)
            except httpx.HTTPError as err:
                await self._abortable(asyncio.sleep(_after_failed_connection(cfg, err, attempt, f"{method} {cfg.base_url}{path}", rid)), method, path, rid)
                continue
            body, wait = _answer(cfg, call, response, attempt)
            if body is not None:
                return body
            await self._abortable(asyncio.sleep(wait), method, path, rid)
        raise AssertionError("unreachable")

    async def _abortable(self, work: Any, method: str, path: str, request_id: str) -> Any:
        """``work`` (a coroutine), or APIUserAbortError as soon as the cancel event is set (work cancelled)."""
        cancel = self._config.cancel
        if cancel is None:
            return await work
        if cancel.is_set():
            work.close()
            raise self._config.aborted(method, path, request_id)
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
            stop.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        try:
            await task
        except asyncio.CancelledError:
            pass
        raise self._config.aborted(method, path, request_id)


__all__ = ["Client", "AsyncClient", "DEFAULT_BASE_URL"]

"""Typed errors. Every answer the service refuses becomes one exception class per HTTP status (and
one per code where callers branch on it), carrying the contract's stable ``error`` code, its
``detail``, the status, the ``x-request-id`` to quote in a support request, and ``Retry-After``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Type


class FacecomputeError(Exception):
    """Base class of every error this package raises about a request."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: Optional[int] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        self.code = code
        self.detail = detail
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.body = body
        where = f"{status} " if status is not None else ""
        rid = f" (x-request-id {request_id})" if request_id else ""
        super().__init__(f"{where}{code}: {detail}{rid}")


class APIConnectionError(FacecomputeError):
    """The request never got an answer: refused or reset connection, DNS, TLS or a timeout."""


class APITimeoutError(APIConnectionError):
    """No answer within the client's ``timeout`` (code ``timeout``)."""


class APIUserAbortError(APIConnectionError):
    """The caller's cancel event (``with_options(cancel=...)``) was set before the answer came: before
    sending, during a wait between retries, or (``AsyncClient``) while the request was in flight;
    code ``aborted``. An ``asyncio`` task cancelled from outside raises ``CancelledError`` as usual."""


class BadRequestError(FacecomputeError):
    """400: invalid_request, unsupported_option, model_not_allowed, invalid_image, ..."""


class AuthenticationError(FacecomputeError):
    """401: missing_api_key or invalid_api_key."""


class InsufficientCreditsError(FacecomputeError):
    """402: the account's free calls are used up."""


class PermissionDeniedError(FacecomputeError):
    """403: account_inactive."""


class NotFoundError(FacecomputeError):
    """404: not a route of the service (check base_url)."""


class PayloadTooLargeError(FacecomputeError):
    """413: image_too_large, request_too_large, too_many_pixels, too_many_targets."""


class UnprocessableEntityError(FacecomputeError):
    """422: no_face_detected, url_fetch_failed."""


class NoFaceDetectedError(UnprocessableEntityError):
    """422 no_face_detected: no face after the detector fallback (enforce_detection=True)."""


class RateLimitError(FacecomputeError):
    """429 rate_limited, raised once the retries are spent; ``retry_after`` says when to come back."""


class InternalServerError(FacecomputeError):
    """5xx: the service failed (a 5xx call is refunded)."""


class ServiceUnavailableError(InternalServerError):
    """503 queue_full, queue_timeout, service_warming or gateway_draining, once the retries are spent."""


class GatewayTimeoutError(InternalServerError):
    """504 upstream_timeout."""


_BY_STATUS: Dict[int, Type[FacecomputeError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: InsufficientCreditsError,
    403: PermissionDeniedError,
    404: NotFoundError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    503: ServiceUnavailableError,
    504: GatewayTimeoutError,
}

_BY_CODE: Dict[str, Type[FacecomputeError]] = {
    "no_face_detected": NoFaceDetectedError,
}


def error_class(status: int, code: str) -> Type[FacecomputeError]:
    """The class for an error answer: by code where one is named, else by status."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return InternalServerError
    return FacecomputeError


class NotOfferedError(NotImplementedError):
    """A DeepFace function or option this service does not offer (analyze, find, anti-spoofing, ...)."""

"""facecompute: the Python client of the facecompute face-recognition service.

- :class:`Client` / :class:`AsyncClient`: ``capabilities()``, ``verify()``, ``represent()``, ``compare()``.
- :mod:`facecompute.DeepFace`: DeepFace's ``verify`` and ``represent`` served by the service
  (``from facecompute import DeepFace``).
- :mod:`facecompute.errors`: one exception class per kind of refusal, carrying the contract's code.
- :mod:`facecompute.types`: the results as TypedDicts, generated from the service's openapi.json.
"""
from . import DeepFace, types
from ._version import __version__
from .client import AsyncClient, Client
from .errors import (
    APIConnectionError,
    APITimeoutError,
    APIUserAbortError,
    AuthenticationError,
    BadRequestError,
    FacecomputeError,
    GatewayTimeoutError,
    InsufficientCreditsError,
    InternalServerError,
    NoFaceDetectedError,
    NotFoundError,
    NotOfferedError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)

__all__ = [
    "__version__",
    "Client",
    "AsyncClient",
    "DeepFace",
    "types",
    "FacecomputeError",
    "APIConnectionError",
    "APITimeoutError",
    "APIUserAbortError",
    "BadRequestError",
    "AuthenticationError",
    "InsufficientCreditsError",
    "PermissionDeniedError",
    "NotFoundError",
    "PayloadTooLargeError",
    "UnprocessableEntityError",
    "NoFaceDetectedError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "GatewayTimeoutError",
    "NotOfferedError",
]

"""The service's responses as TypedDicts, generated from openapi.json by scripts/gen_types.py: do not
edit; run ``python scripts/gen_types.py`` after the document changes (a test fails until then).
"""
from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union



class FacialArea(TypedDict, total=False):
    x: Optional[int]
    y: Optional[int]
    w: Optional[int]
    h: Optional[int]
    left_eye: Optional[List[float]]
    right_eye: Optional[List[float]]
    nose: Optional[List[float]]
    mouth_left: Optional[List[float]]
    mouth_right: Optional[List[float]]
    detector: str


class FacialAreas(TypedDict):
    img1: FacialArea
    img2: FacialArea


class VerifyResponse(TypedDict):
    verified: bool
    distance: float
    threshold: float
    confidence: float
    model: str
    detector_backend: str
    similarity_metric: Literal["cosine", "euclidean", "euclidean_l2", "angular"]
    facial_areas: FacialAreas
    time: float


class _RepresentFaceRequired(TypedDict):
    embedding: List[float]
    facial_area: FacialArea
    face_confidence: float


class RepresentFace(_RepresentFaceRequired, total=False):
    # With return_face=true only: the face crop DeepFace's extract_faces returns, before resizing and before colour conversion or /255, as base64 of a PNG (8-bit RGB, lossless; the whole
    face_png: str


class RepresentResponse(TypedDict):
    # One entry per face; for a batch (img is an array) one list of faces per image.
    results: List[Union[RepresentFace, List[RepresentFace]]]
    model: str
    detector_backend: str


class CompareSourceFace(TypedDict):
    facial_area: FacialArea
    face_confidence: float


class CompareResult(TypedDict):
    index: int
    distance: float
    verified: bool
    confidence: float


class CompareResponse(TypedDict):
    model: str
    similarity_metric: Literal["cosine", "euclidean", "euclidean_l2", "angular"]
    threshold: float
    dims: int
    # The face found in an image source, or null for an embedding; a list with one entry per source when `source` was a list.
    source: Optional[Union[CompareSourceFace, List[Optional[CompareSourceFace]]]]
    # One entry per target (nearest first with top_k, else in target order); a list of such lists, one per source, when `source` was a list.
    results: List[Union[CompareResult, List[CompareResult]]]
    time: float


class Pairs(TypedDict, total=False):
    genuine: int
    impostor: int


class Far1e2(TypedDict, total=False):
    threshold: float
    far: float
    tar: float
    accuracy: float


class ModelsValueValueValue(TypedDict, total=False):
    far_1e_2: Far1e2
    far_1e_3: Far1e2
    best_accuracy: Far1e2
    deepface: Far1e2
    auc: float


class Calibration(TypedDict, total=False):
    """Thresholds beyond DeepFace's fixed ones (which stay the default), measured on LFW View 1 DevTrain by tools/calibration/roc.ts: `models.<model>.<detector>.<metric>` holds the threshold at a false-accept rate of 1e-2 (`far_1e_2`) and 1e-3 (`far_1e_3`), the threshold with the best accuracy (`best_accur"""
    dataset: str
    pairs: Pairs
    note: str
    models: Dict[str, Dict[str, Dict[str, ModelsValueValueValue]]]


class _ModelSourceFileRequired(TypedDict):
    source: Literal["canonical", "carrier"]
    file: str
    sha256: str


class ModelSourceFile(_ModelSourceFileRequired, total=False):
    url: str
    ecosystem: str
    package: str
    version: str
    path: str
    fingerprint: str
    # The registry package that delivered the canonical file, byte for byte (e.g. `debian:opencv-data`), per the last `models fetch`.
    fetched_from: str
    note: str


class ModelSourcesValue(TypedDict):
    source: Literal["canonical", "carrier", "test_weights"]
    files: List[ModelSourceFile]


class _CapabilitiesResponseRequired(TypedDict):
    allowed_models: List[str]
    default_model: str
    allowed_detectors: List[str]
    default_detector: str


class CapabilitiesResponse(_CapabilitiesResponseRequired, total=False):
    distance_metrics: List[Literal["cosine", "euclidean", "euclidean_l2", "angular"]]
    default_distance_metric: Literal["cosine", "euclidean", "euclidean_l2", "angular"]
    embedding_dims: Dict[str, int]
    thresholds: Dict[str, Dict[str, float]]
    limits: Dict[str, float]
    # The image input modes this deployment accepts: upload (multipart file parts), base64, data_uri, and url and file when switched on.
    input_modes: List[Literal["upload", "base64", "data_uri", "url", "file"]]
    version: str
    # Present when the configured default model cannot be served (a degraded start, FACECOMPUTE_ALLOW_DEGRADED_START=true): why, and which model is the effective default.
    default_model_reason: str
    # Present when the configured default detector cannot be served (a degraded start): why, and which detector is the effective default. `skip` never becomes the default; with no other 
    default_detector_reason: str
    # Allowed models and detectors that cannot be served here, and why: the missing weight files, when `facecompute models fetch` tried them every source and why it failed, and the comma
    unavailable: Dict[str, str]
    # The one command that fetches every model and detector in `unavailable`.
    fetch_command: str
    # Present when retinaface, the contract's pre-warmed detector fallback, cannot be served: an image where opencv finds no face then gets no fallback. Says why and the command that fet
    detector_fallback_unavailable: str
    # Which network serves a detector whose name covers several: `retinaface` is `resnet50` (DeepFace's) or `mobilenet0.25`.
    detector_variants: Dict[str, str]
    # Models served from random test weights (FACECOMPUTE_TEST_WEIGHTS=true, structural tests only; never in production). Their answers mean nothing.
    test_weight_models: List[str]
    # Thresholds beyond DeepFace's fixed ones (which stay the default), measured on LFW View 1 DevTrain by tools/calibration/roc.ts: `models.<model>.<detector>.<metric>` holds the thresh
    calibration: Calibration
    # Which weight file serves each model: `canonical` (the file DeepFace downloads) or `carrier` (a registry package that carries the same weights, named with its version; conversion ch
    model_sources: Dict[str, ModelSourcesValue]


class _ReadinessResponseRequired(TypedDict):
    status: Literal["ready", "warming", "error"]
    ready: bool
    warming: bool
    warmed_models: List[str]
    warmed_detectors: List[str]
    error: str


class ReadinessResponse(_ReadinessResponseRequired, total=False):
    warmed_at: str
    # true when the service started with a configured default model or detector it cannot serve (FACECOMPUTE_ALLOW_DEGRADED_START=true); /capabilities says which and why (default_model_r
    degraded: bool
    # Allowed models and detectors that are not installed here (e.g. retinaface and yunet on a machine that cannot reach their canonical URLs); /capabilities.unavailable says why. Readin
    unavailable: List[str]
    # The command that fetches every model and detector in `unavailable`.
    fetch_command: str
    # Present when retinaface, the contract's pre-warmed detector fallback, cannot be served: the fallback is absent, why, and the command that fetches it (FACECOMPUTE_REQUIRE_FALLBACK_D
    detector_fallback_unavailable: str


class ErrorResponse(TypedDict):
    error: Literal["invalid_request", "unsupported_option", "model_not_allowed", "detector_not_allowed", "invalid_image", "embedding_dimension_mismatch", "invalid_embedding", "url_not_allowed", "input_mode_disabled", "missing_api_key", "invalid_api_key", "insufficient_credits", "account_inactive", "not_found", "method_not_allowed", "image_too_large", "request_too_large", "too_many_pixels", "too_many_targets", "request_over_memory_budget", "no_face_detected", "url_fetch_failed", "url_not_image", "rate_limited", "too_many_strikes", "internal_error", "upstream_failed", "upstream_lost", "upstream_response_too_large", "queue_full", "queue_timeout", "gateway_draining", "service_warming", "body_capacity_full", "memory_budget_full", "upstream_timeout", "request_timeout", "upload_too_slow", "expectation_failed", "headers_too_large", "unauthorized", "email_taken", "key_limit_reached", "invalid_credentials", "csrf_failed", "origin_not_allowed", "signup_rate_limited", "payment_method_declined", "card_in_use"]
    detail: str


__all__ = [
    "Calibration",
    "CapabilitiesResponse",
    "CompareResponse",
    "CompareResult",
    "CompareSourceFace",
    "ErrorResponse",
    "FacialArea",
    "FacialAreas",
    "Far1e2",
    "ModelSourceFile",
    "ModelSourcesValue",
    "ModelsValueValueValue",
    "Pairs",
    "ReadinessResponse",
    "RepresentFace",
    "RepresentResponse",
    "VerifyResponse",
]

"""``from facecompute import DeepFace``: DeepFace 0.0.100's ``verify`` and ``represent`` served by facecompute.

The same function names, parameters, defaults (``model_name="VGG-Face"``, ``detector_backend="opencv"``,
``distance_metric="cosine"``, ...) and return shapes as DeepFace, so that a script written for DeepFace
runs after changing its import line. The service is found through FACECOMPUTE_URL and
FACECOMPUTE_API_KEY (or :func:`configure`).

Differences a caller can meet, each on purpose:

- Only the models and detectors the service serves are accepted (``GET /capabilities``); DeepFace's
  default ``VGG-Face`` is not among them today, so name a model (``model_name="Facenet"``): the
  service never silently answers with another model than the one asked for. Any other name raises
  DeepFace's ``ValueError`` ("Invalid model_name passed - facial_recognition/<name>"), naming what
  the service serves.
- No detector fallback: when opencv finds no face, DeepFace raises (or, with enforce_detection=False,
  uses the whole image), and so does this module (the service's ``detector_fallback=false``).
- ``anti_spoofing=True``, ``return_face=True`` and ``cryptosystem`` raise :class:`NotOfferedError`,
  as do ``analyze``, ``find``, ``stream``, ``register``, ``search``, ``build_index`` and ``extract_faces``.
- ``time`` is the wall time of the call as seen here, network included.
"""
from __future__ import annotations

import os
import time
from typing import IO, Any, Dict, List, Optional, Sequence, Union

from . import _inputs
from ._deepface_compat import (
    METRICS,
    NORMALIZATIONS,
    DataTypeError,
    DimensionMismatchError,
    FaceNotDetected,
    ImgNotFound,
    UnimplementedError,
    check_embedding,
    face,
    failing_image,
    image_error,
    invalid_model,
    l2,
    minmax,
    not_offered,
    verify_result,
)
from .client import Client
from .errors import FacecomputeError, NotOfferedError

ImageLike = Union[str, Any, IO[bytes]]

_client: Optional[Client] = None


def configure(base_url: Optional[str] = None, api_key: Optional[str] = None, **options: Any) -> Client:
    """Points the module at a service (otherwise FACECOMPUTE_URL / FACECOMPUTE_API_KEY); returns its Client."""
    global _client
    if _client is not None:
        _client.close()
    _client = Client(base_url, api_key, **options)
    return _client


def _service() -> Client:
    global _client
    if _client is None:
        _client = Client()
    return _client


def _served(kind: str) -> List[str]:
    caps = _service().capabilities()
    return list(caps["allowed_models"] if kind == "facial_recognition" else caps["allowed_detectors"])


def _check_model(model_name: str) -> int:
    served = _served("facial_recognition")
    if model_name not in served:
        raise invalid_model("facial_recognition", model_name, served)
    return int(_service().capabilities().get("embedding_dims", {}).get(model_name, 0))


def _check_detector(detector_backend: str) -> None:
    served = _served("face_detector")
    if detector_backend not in served:
        raise invalid_model("face_detector", detector_backend, served)


def _check_options(normalization: str, anti_spoofing: bool) -> None:
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unimplemented normalization type - {normalization}")
    if anti_spoofing:
        raise not_offered("anti_spoofing=True (no anti-spoofing model)")


def _load(value: Any, index: Optional[int]) -> Any:
    """DeepFace's loading checks that need no service: a missing path, a non-ASCII path, a wrong type."""
    if isinstance(value, os.PathLike):
        value = os.fsdecode(os.fspath(value))
    if isinstance(value, str) and not value.startswith("data:image/") and not value.lower().startswith(("http://", "https://")):
        if not os.path.isfile(value):
            raise ImgNotFound(f"Confirm that {value} exists")
        if not value.isascii():
            raise ValueError(f"Input image must not have non-english characters - {value}")
    elif isinstance(value, str) and value.startswith("data:") and not value.startswith("data:image/"):
        raise ImgNotFound(f"Confirm that {value[:40]} exists")
    elif not (isinstance(value, str) or _inputs.is_numpy(value) or (hasattr(value, "read") and callable(value.read)) or isinstance(value, (bytes, bytearray))):
        raise DataTypeError(f"img must be numpy array or str but it is {type(value)}")
    return value


def verify(
    img1_path: Union[str, Any, IO[bytes], List[float]],
    img2_path: Union[str, Any, IO[bytes], List[float]],
    model_name: str = "VGG-Face",
    detector_backend: str = "opencv",
    distance_metric: str = "cosine",
    enforce_detection: bool = True,
    align: bool = True,
    expand_percentage: int = 0,
    normalization: str = "base",
    silent: bool = False,
    threshold: Optional[float] = None,
    anti_spoofing: bool = False,
) -> Dict[str, Any]:
    """DeepFace.verify: whether two images (or precomputed embeddings) show the same person.

    Returns DeepFace's dict: verified, distance, threshold, confidence, model, detector_backend,
    similarity_metric, facial_areas {img1, img2}, time.
    """
    tic = time.time()
    dims = _check_model(model_name)
    _check_options(normalization, anti_spoofing)
    inputs = []
    for index, value in ((1, img1_path), (2, img2_path)):
        if isinstance(value, list):
            check_embedding(value, index, model_name, dims)
            inputs.append(value)
        else:
            # DeepFace loads and detects inside one try per image: its errors, the detector's
            # included, come wrapped in "Exception while processing imgN_path".
            try:
                inputs.append(_load(value, index))
                _check_detector(detector_backend)
            except ValueError as err:
                raise ValueError(f"Exception while processing img{index}_path") from err
    if distance_metric not in METRICS:
        raise ValueError("Invalid distance_metric passed - ", distance_metric)
    try:
        body = _service().verify(
            inputs[0],
            inputs[1],
            model_name=model_name,
            detector_backend=detector_backend,
            distance_metric=distance_metric,
            enforce_detection=enforce_detection,
            align=align,
            expand_percentage=expand_percentage,
            normalization=normalization,
            # DeepFace's `threshold or pretuned`: 0 and None both mean the model's threshold.
            threshold=threshold or None,
            detector_fallback=False,
        )
    except FacecomputeError as err:
        which = failing_image(err.detail)
        if which in (1, 2):
            inner = image_error(err, _inputs.describe((img1_path, img2_path)[which - 1]) or f"img{which}_path")
            if inner is not None:
                raise ValueError(f"Exception while processing img{which}_path") from inner
        raise
    return verify_result(body, time.time() - tic)


def represent(
    img_path: Union[str, Any, IO[bytes], Sequence[Union[str, Any, IO[bytes]]]],
    model_name: str = "VGG-Face",
    enforce_detection: bool = True,
    detector_backend: str = "opencv",
    align: bool = True,
    expand_percentage: int = 0,
    normalization: str = "base",
    anti_spoofing: bool = False,
    max_faces: Optional[int] = None,
    l2_normalize: bool = False,
    minmax_normalize: bool = False,
    return_face: bool = False,
    cryptosystem: Optional[Any] = None,
) -> Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]]:
    """DeepFace.represent: one {embedding, facial_area, face_confidence} per face.

    A list (or a 4-D NumPy array) of more than one image gives one such list per image, as DeepFace does.
    """
    _check_model(model_name)
    _check_options(normalization, anti_spoofing)
    if return_face:
        raise not_offered("return_face=True (the service returns no face crops)")
    if cryptosystem is not None:
        raise not_offered("cryptosystem (homomorphic encryption of embeddings)")
    given: Any = img_path
    if isinstance(given, list):
        images = list(given)
    elif _inputs.is_numpy(given) and given.ndim == 4:
        images = [given[i] for i in range(given.shape[0])]
    else:
        images = [given]
    if not images:
        raise ValueError("img_path is an empty list")
    images = [_load(v, None) for v in images]
    _check_detector(detector_backend)
    client = _service()
    chunk = max(1, int(client.capabilities().get("limits", {}).get("max_batch_images", 16)))
    per_image: List[List[Dict[str, Any]]] = []
    for start in range(0, len(images), chunk):
        part = images[start : start + chunk]
        try:
            body = client.represent(
                part if len(images) > 1 else part[0],
                model_name=model_name,
                detector_backend=detector_backend,
                enforce_detection=enforce_detection,
                align=align,
                expand_percentage=expand_percentage,
                normalization=normalization,
                max_faces=max_faces,
                # With minmax the order is DeepFace's: minmax first, then L2, both here.
                l2_normalize=l2_normalize and not minmax_normalize,
                detector_fallback=False,
            )
        except FacecomputeError as err:
            which = failing_image(err.detail)
            if which is not None and which < len(part):
                inner = image_error(err, _inputs.describe(part[which] if len(images) > 1 else part[0]) or "img_path")
                if inner is not None:
                    raise inner from None
            raise
        results = body["results"]
        per_image.extend(results if len(images) > 1 else [results])
    out = []
    for faces in per_image:
        objs = [face(f, detector_backend) for f in faces]
        if minmax_normalize:
            for o in objs:
                o["embedding"] = minmax(model_name, o["embedding"])
                if l2_normalize:
                    o["embedding"] = l2(o["embedding"])
        out.append(objs)
    return out[0] if len(images) == 1 else out


class _ServedModel:
    """What build_model returns here: the name and embedding size of a model the service serves."""

    def __init__(self, model_name: str, output_shape: int) -> None:
        self.model_name = model_name
        self.output_shape = output_shape

    def __repr__(self) -> str:
        return f"ServedModel({self.model_name!r}, output_shape={self.output_shape})"


def build_model(model_name: str, task: str = "facial_recognition") -> Any:
    """Checks that the service serves ``model_name`` (nothing to load here: the service holds the models)."""
    if task == "facial_recognition":
        return _ServedModel(model_name, _check_model(model_name))
    if task == "face_detector":
        _check_detector(model_name)
        return _ServedModel(model_name, 0)
    raise UnimplementedError(f"unimplemented task - {task}")


def analyze(*args: Any, **kwargs: Any) -> Any:
    """Not offered: facial attribute analysis (age, gender, emotion, race)."""
    raise not_offered("DeepFace.analyze (age, gender, emotion and race)")


def find(*args: Any, **kwargs: Any) -> Any:
    """Not offered: search a folder of faces. /compare does 1:N against embeddings you keep."""
    raise not_offered("DeepFace.find (search in a folder of images; use represent and compare)")


def stream(*args: Any, **kwargs: Any) -> Any:
    """Not offered: the webcam loop."""
    raise not_offered("DeepFace.stream (real-time webcam analysis)")


def register(*args: Any, **kwargs: Any) -> Any:
    """Not offered: the service stores no faces."""
    raise not_offered("DeepFace.register (storing faces in a database)")


def search(*args: Any, **kwargs: Any) -> Any:
    """Not offered: the service stores no faces; keep embeddings yourself and use compare."""
    raise not_offered("DeepFace.search (database search; use represent and compare)")


def build_index(*args: Any, **kwargs: Any) -> Any:
    """Not offered: there is no database to index."""
    raise not_offered("DeepFace.build_index")


def extract_faces(*args: Any, **kwargs: Any) -> Any:
    """Not offered: the service returns facial areas (represent), not face crops."""
    raise not_offered("DeepFace.extract_faces (face crops; represent gives each face's facial_area)")


__all__ = [
    "verify",
    "represent",
    "build_model",
    "configure",
    "analyze",
    "find",
    "stream",
    "register",
    "search",
    "build_index",
    "extract_faces",
    "NotOfferedError",
    "ImgNotFound",
    "FaceNotDetected",
    "DimensionMismatchError",
    "DataTypeError",
    "UnimplementedError",
]

"""``from facecompute import DeepFace``: DeepFace 0.0.100's ``verify``, ``represent`` and ``extract_faces``
(and the deprecated ``detectFace``) served by facecompute.

The same function names, parameters, defaults (``model_name="VGG-Face"``, ``detector_backend="opencv"``,
``distance_metric="cosine"``, ...) and return shapes as DeepFace, so that a script written for DeepFace
runs after changing its import line. The service is found through FACECOMPUTE_URL and
FACECOMPUTE_API_KEY (or :func:`configure`).

Differences a caller can meet, each on purpose:

- DeepFace's default model, VGG-Face, is not served. A call that leaves ``model_name`` at its default
  uses the service's ``default_model`` (``GET /capabilities``), or the one chosen with
  ``configure(default_model=...)`` or FACECOMPUTE_DEEPFACE_DEFAULT_MODEL, and logs one warning per
  process: its embeddings are not comparable with VGG-Face ones. A model named explicitly is used as
  named: ``model_name="VGG-Face"`` or any unserved name raises DeepFace's ``ValueError`` ("Invalid
  model_name passed - facial_recognition/<name>"), naming what the service serves.
- No detector fallback: when opencv finds no face, DeepFace raises (or, with enforce_detection=False,
  uses the whole image), and so does this module (the service's ``detector_fallback=false``).
- ``extract_faces`` and ``represent(return_face=True)`` build DeepFace's face arrays from the crops the
  service returns (``/represent`` with ``return_face``); extract_faces runs the default model too.
- NumPy images of any dtype are taken as DeepFace takes them: a float image within [0, 1] is scaled by
  255, anything else rounded and clipped to 8 bits; a 4-D array is a batch; an array that is not 3-D
  raises DeepFace's ValueError.
- ``anti_spoofing=True`` and ``cryptosystem`` raise :class:`NotOfferedError`, as do ``analyze``,
  ``find``, ``stream``, ``register``, ``search`` and ``build_index``.
- ``time`` is the wall time of the call as seen here, network included.
"""
from __future__ import annotations

import io
import logging
import os
import time
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _faces, _inputs
from ._arrays import to_uint8
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
    facial_area,
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

# The DeepFace release whose API this module serves (DeepFace.__version__ there).
__version__ = "0.0.100"

_client: Optional[Client] = None
_logger = logging.getLogger("facecompute.DeepFace")
DEFAULT_MODEL_ENV = "FACECOMPUTE_DEEPFACE_DEFAULT_MODEL"


class _DeepFaceDefault(str):
    """DeepFace's default model name, told apart from the same name passed explicitly (by identity)."""


# The signatures show DeepFace's default; only this very object means "left at the default".
_VGG_FACE_DEFAULT = _DeepFaceDefault("VGG-Face")
_default_model: Optional[str] = None
_warned_default = False


def configure(
    base_url: Optional[str] = None, api_key: Optional[str] = None, *, default_model: Optional[str] = None, **options: Any
) -> Client:
    """Points the module at a service (otherwise FACECOMPUTE_URL / FACECOMPUTE_API_KEY); returns its Client.

    ``default_model`` is the model used when a call leaves ``model_name`` at DeepFace's default (otherwise
    FACECOMPUTE_DEEPFACE_DEFAULT_MODEL, else the service's ``default_model``).
    """
    global _client, _default_model
    if _client is not None:
        _client.close()
    _client = Client(base_url, api_key, **options)
    _default_model = default_model
    return _client


def _resolve_model(model_name: str) -> str:
    """The model a call uses: ``model_name`` as given, or the served default when it was left at DeepFace's."""
    global _warned_default
    if model_name is not _VGG_FACE_DEFAULT:
        return model_name
    chosen = _default_model or os.environ.get(DEFAULT_MODEL_ENV) or str(_service().capabilities()["default_model"])
    if not _warned_default:
        _warned_default = True
        _logger.warning(
            "DeepFace's default model VGG-Face is not served by facecompute; using %s instead. Its embeddings are not "
            "comparable with VGG-Face ones: pass model_name explicitly, or choose the default with "
            "DeepFace.configure(default_model=...) or %s.",
            chosen,
            DEFAULT_MODEL_ENV,
        )
    return chosen


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
    elif _inputs.is_numpy(value):
        # DeepFace takes any dtype; the client's PNG path takes 8-bit pixels only.
        return to_uint8(value)
    elif isinstance(value, io.StringIO):
        raise DataTypeError("img requires bytes and cannot be an io.StringIO object.")
    elif not (isinstance(value, str) or (hasattr(value, "read") and callable(value.read)) or isinstance(value, (bytes, bytearray))):
        raise DataTypeError(f"img must be numpy array or str but it is {type(value)}")
    return value


def verify(
    img1_path: Union[str, Any, IO[bytes], List[float]],
    img2_path: Union[str, Any, IO[bytes], List[float]],
    model_name: str = _VGG_FACE_DEFAULT,
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
    model_name = _resolve_model(model_name)
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
        body: Any = _service().verify(
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
    model_name: str = _VGG_FACE_DEFAULT,
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
    model_name = _resolve_model(model_name)
    _check_model(model_name)
    _check_options(normalization, anti_spoofing)
    if cryptosystem is not None:
        raise not_offered("cryptosystem (homomorphic encryption of embeddings)")
    images = _images(img_path)
    if detector_backend == "skip":
        for v in images:
            if _inputs.is_numpy(v) and v.ndim != 3:
                raise ValueError(f"Input img must be 3 dimensional but it is {v.shape}")
    # DeepFace resizes a float `skip` image as floats, a uint8 one in 8 bits: the service is told which.
    floats = [detector_backend == "skip" and _inputs.is_numpy(v) and v.dtype.kind == "f" for v in images]
    images = [_load(v, None) for v in images]
    _check_detector(detector_backend)
    options: Dict[str, Any] = dict(
        model_name=model_name,
        detector_backend=detector_backend,
        enforce_detection=enforce_detection,
        align=align,
        expand_percentage=expand_percentage,
        normalization=normalization,
        max_faces=max_faces,
        # With minmax the order is DeepFace's: minmax first, then L2, both here.
        l2_normalize=l2_normalize and not minmax_normalize,
        return_face=return_face or None,
    )
    if len(set(floats)) == 1:
        per_image = _represent_each(images, image_dtype="float" if floats[0] else None, **options)
    else:  # a batch mixing float and uint8 arrays under skip: one call per image, each with its dtype
        per_image = [_represent_each([v], image_dtype="float" if f else None, **options)[0] for v, f in zip(images, floats)]
    out = []
    for faces in per_image:
        objs = []
        for f in faces:
            o = face(f, detector_backend)
            if return_face:
                # DeepFace returns the model's input for this face: resized, normalised, BGR float32.
                o["face"] = _faces.model_input(_faces.crop_bgr(f["face_png"]), model_name, normalization)
            objs.append(o)
        if minmax_normalize:
            for o in objs:
                o["embedding"] = minmax(model_name, o["embedding"])
                if l2_normalize:
                    o["embedding"] = l2(o["embedding"])
        out.append(objs)
    return out[0] if len(images) == 1 else out


def _images(img_path: Any) -> List[Any]:
    """DeepFace's batch rule: a list, or a 4-D NumPy array split along its first axis, is a batch."""
    if isinstance(img_path, list):
        images = list(img_path)
    elif _inputs.is_numpy(img_path) and img_path.ndim == 4:
        images = [img_path[i] for i in range(img_path.shape[0])]
    else:
        images = [img_path]
    if not images:
        raise ValueError("img_path is an empty list")
    return images


def _represent_each(images: List[Any], **options: Any) -> List[List[Dict[str, Any]]]:
    """/represent over `images` in batches of the service's max_batch_images: one face list per image.
    A refusal about one image raises DeepFace's exception for it."""
    client = _service()
    chunk = max(1, int(client.capabilities().get("limits", {}).get("max_batch_images", 16)))
    per_image: List[List[Dict[str, Any]]] = []
    for start in range(0, len(images), chunk):
        part = images[start : start + chunk]
        try:
            body = client.represent(part if len(images) > 1 else part[0], detector_fallback=False, **options)
        except FacecomputeError as err:
            which = failing_image(err.detail)
            if which is not None and which < len(part):
                inner = image_error(err, _inputs.describe(part[which] if len(images) > 1 else part[0]) or "img_path")
                if inner is not None:
                    raise inner from None
            raise
        results: Any = body["results"]
        per_image.extend(results if len(images) > 1 else [results])
    return per_image


def extract_faces(
    img_path: Union[str, Any, IO[bytes], List[Any]],
    detector_backend: str = "opencv",
    enforce_detection: bool = True,
    align: bool = True,
    expand_percentage: int = 0,
    grayscale: bool = False,
    color_face: str = "rgb",
    normalize_face: bool = True,
    anti_spoofing: bool = False,
) -> Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]]:
    """DeepFace.extract_faces: one {face, facial_area, confidence} per face; a list of such lists for a
    batch (a list, or a 4-D NumPy array). ``face`` is the crop (detected, expanded, aligned) in
    ``color_face`` order, /255 as float64 when ``normalize_face``; ``grayscale`` (deprecated) is gray.
    """
    if anti_spoofing:
        raise not_offered("anti_spoofing=True (no anti-spoofing model)")
    given: Any = img_path
    batch = isinstance(given, list) or (_inputs.is_numpy(given) and given.ndim == 4)
    images = _images(img_path)
    images = [_load(v, None) for v in images]
    _check_detector(detector_backend)
    if grayscale:
        _logger.warning("Parameter grayscale is deprecated. Use color_face instead.")
    model_name = _default_model or os.environ.get(DEFAULT_MODEL_ENV) or str(_service().capabilities()["default_model"])
    per_image = _represent_each(
        images,
        model_name=model_name,
        detector_backend=detector_backend,
        enforce_detection=enforce_detection,
        align=align,
        expand_percentage=max(0, int(expand_percentage)),
        return_face=True,
    )
    out: List[List[Dict[str, Any]]] = []
    for faces in per_image:
        out.append(
            [
                {
                    "face": _faces.extract_face(_faces.crop_bgr(f["face_png"]), color_face, normalize_face, grayscale),
                    "facial_area": facial_area(f["facial_area"]),
                    "confidence": round(float(f["face_confidence"] or 0), 2),
                }
                for f in faces
            ]
        )
    return out if batch else out[0]


def detectFace(  # noqa: N802 (DeepFace's name)
    img_path: Union[str, Any, IO[bytes]],
    target_size: Tuple[int, int] = (224, 224),
    detector_backend: str = "opencv",
    enforce_detection: bool = True,
    align: bool = True,
) -> Any:
    """DeepFace.detectFace (deprecated there): the first face, RGB [0, 1], letterboxed to target_size,
    as a 1 x H x W x 3 float32 array; None when no face was returned."""
    _logger.warning("Function detectFace is deprecated. Use extract_faces instead.")
    faces: Any = extract_faces(img_path, detector_backend=detector_backend, grayscale=False, enforce_detection=enforce_detection, align=align)
    if not faces:
        return None
    return _faces.resize_image(faces[0]["face"], target_size)


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
    "detectFace",
    "NotOfferedError",
    "ImgNotFound",
    "FaceNotDetected",
    "DimensionMismatchError",
    "DataTypeError",
    "UnimplementedError",
]

"""What makes the DeepFace shim look like DeepFace 0.0.100 (deepface/modules/exceptions.py,
verification.py, representation.py, config/minmax.py): its exception classes (all ValueError), its
messages, the names it knows, and its answer types. Facts from DeepFace; the code is ours.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from .errors import FacecomputeError, NotOfferedError

MIGRATION_GUIDE = "docs/migrating-from-deepface.md"

# DeepFace's model and detector names (modeling.py), to tell "a DeepFace model we do not serve" from a typo.
DEEPFACE_MODELS = ("VGG-Face", "OpenFace", "Facenet", "Facenet512", "DeepFace", "DeepID", "Dlib", "ArcFace", "SFace", "GhostFaceNet", "Buffalo_L")
DEEPFACE_DETECTORS = (
    "opencv", "mtcnn", "ssd", "dlib", "retinaface", "mediapipe", "yolov8n", "yolov8m", "yolov8l", "yolov11n", "yolov11s",
    "yolov11m", "yolov11l", "yolov12n", "yolov12s", "yolov12m", "yolov12l", "yunet", "fastmtcnn", "centerface", "skip",
)
METRICS = ("cosine", "euclidean", "euclidean_l2", "angular")
NORMALIZATIONS = ("base", "raw", "Facenet", "Facenet2018", "VGGFace", "VGGFace2", "ArcFace")

# deepface/config/minmax.py: per-model bounds for minmax_normalize; other models are left as they are.
MINMAX = {
    "VGG-Face": (0.0, 0.27054874177488775),
    "Facenet": (-3.541942596435547, 3.247769594192505),
    "Facenet512": (-4.388302803039551, 3.643190622329712),
    "OpenFace": (-0.34191709756851196, 0.26318004727363586),
    "DeepFace": (0.0, 17.294939041137695),
    "DeepID": (0.0, 127.86836242675781),
    "Dlib": (-0.41398656368255615, 0.5201137661933899),
    "ArcFace": (-2.945136308670044, 2.087090015411377),
}

NO_FACE = "Face could not be detected in {name}.Please confirm that the picture is a face photo or consider to set enforce_detection param to False."


class ImgNotFound(ValueError):
    """The input image is not found or cannot be loaded (DeepFace's name)."""


class FaceNotDetected(ValueError):
    """No face in the input image with enforce_detection=True (DeepFace's name)."""


class DimensionMismatchError(ValueError):
    """A precomputed embedding of the wrong length (DeepFace's name)."""


class DataTypeError(ValueError):
    """An input of the wrong type (DeepFace's name)."""


class UnimplementedError(ValueError):
    """An unknown or unserved model or detector (DeepFace's name)."""


def not_offered(what: str) -> NotOfferedError:
    return NotOfferedError(
        f"{what} is not offered by the facecompute service: it computes verify and represent (and compare) and stores no "
        f"faces. See {MIGRATION_GUIDE} for what to use instead."
    )


def invalid_model(task: str, name: str, served: List[str]) -> UnimplementedError:
    known = DEEPFACE_MODELS if task == "facial_recognition" else DEEPFACE_DETECTORS
    why = "a DeepFace name this facecompute service does not serve" if name in known else "not a DeepFace name"
    return UnimplementedError(f"Invalid model_name passed - {task}/{name} ({why}; this service serves: {', '.join(served)})")


def failing_image(detail: str) -> Optional[int]:
    """Which input a service error names: img1/img2 -> 1/2, img[i] -> i (0-based), img -> 0."""
    m = re.search(r"\bimg(\d)\b", detail)
    if m:
        return int(m.group(1))
    m = re.search(r"\bimg\[(\d+)\]", detail)
    if m:
        return int(m.group(1))
    return 0 if re.search(r"\bimg\b", detail) else None


def image_error(err: FacecomputeError, name: str) -> Optional[ValueError]:
    """DeepFace's exception for a service refusal about one image, or None when it is not about an image."""
    if err.code == "no_face_detected":
        return FaceNotDetected(NO_FACE.format(name=name))
    if err.code == "invalid_image":
        # load_image_from_io_object: cv2.imdecode gave None.
        if name == "io object":
            return ValueError("Failed to decode image")
        return ImgNotFound(f"Exception while loading {name}")
    return None


def _point(v: Any) -> Any:
    return tuple(int(x) for x in v) if isinstance(v, list) else v


def facial_area(area: Dict[str, Any]) -> Dict[str, Any]:
    """DeepFace's facial_area: x, y, w, h, eyes (and retinaface's nose and mouth) as int tuples;
    the service's extra `detector` key (which detector found it) is left out."""
    out: Dict[str, Any] = {}
    for k, v in area.items():
        if k == "detector":
            continue
        out[k] = _point(v) if k in ("left_eye", "right_eye", "nose", "mouth_left", "mouth_right") else v
    return out


def face(obj: Dict[str, Any], detector_backend: str) -> Dict[str, Any]:
    conf = obj["face_confidence"]
    # DeepFace rounds a detector's confidence to a float, and writes the int 0 for `skip`.
    conf = conf if detector_backend == "skip" else float(conf)
    return {"embedding": [float(x) for x in obj["embedding"]], "facial_area": facial_area(obj["facial_area"]), "face_confidence": conf}


def minmax(model_name: str, embedding: List[float]) -> List[float]:
    lo, hi = MINMAX.get(model_name, (0.0, 0.0))
    if hi - lo == 0:
        return embedding
    return [(min(max(x, lo), hi) - lo) / (hi - lo) for x in embedding]


def l2(embedding: List[float]) -> List[float]:
    norm = sum(x * x for x in embedding) ** 0.5
    return [x / norm for x in embedding] if norm > 0 else embedding


def check_embedding(values: List[Any], index: int, model_name: str, dims: int) -> None:
    if not all(isinstance(v, (float, int)) for v in values):
        raise DataTypeError(f"When passing img{index}_path as a list, ensure that all its items are of type float.")
    if len(values) != dims:
        raise DimensionMismatchError(f"embeddings of {model_name} should have {dims} dimensions, but {index}-th image has {len(values)} dimensions input")


def verify_result(body: Dict[str, Any], elapsed: float) -> Dict[str, Any]:
    """The service's /verify answer in DeepFace's keys, order and types."""
    areas = body["facial_areas"]
    return {
        "verified": bool(body["verified"]),
        "distance": float(body["distance"]),
        "threshold": body["threshold"],
        "confidence": float(body["confidence"]),
        "model": body["model"],
        "detector_backend": body["detector_backend"],
        "similarity_metric": body["similarity_metric"],
        "facial_areas": {"img1": facial_area(areas["img1"]), "img2": facial_area(areas["img2"])},
        "time": round(elapsed, 2),
    }


__all__: Tuple[str, ...] = ("ImgNotFound", "FaceNotDetected", "DimensionMismatchError", "DataTypeError", "UnimplementedError")

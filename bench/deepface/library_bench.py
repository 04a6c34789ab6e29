#!/usr/bin/env python3
"""DeepFace's side of the library-level benchmark (bench/library): represent of one image, verify
of one pair, and sustained represent throughput over the deepface images, for Dlib with a given
detector. Prints one JSON object. Offline tooling: run with the DeepFace venv
(tools/reference/deepface_reference.py says how to make it); weights come from ../shared/weights.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHARED_DIR", REPO.parent / "shared"))
DATA = SHARED / "data" / "deepface"


def pct(samples, p):
    s = sorted(samples)
    if not s:
        return None
    i = min(len(s) - 1, max(0, -(-p * len(s) // 100) - 1))
    return s[int(i)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detector", default="opencv")
    ap.add_argument("--model", default="Dlib")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--images", type=int, default=30, help="images for the sustained run")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "tools" / "reference"))
    from deepface_reference import link_weights  # noqa: E402
    link_weights()
    t0 = time.perf_counter()
    from deepface import DeepFace  # noqa: E402
    img1, img2 = str(DATA / "img1.jpg"), str(DATA / "img2.jpg")
    DeepFace.build_model(args.model)
    # The first call pays lazy initialisation; it is reported separately.
    first = time.perf_counter()
    DeepFace.verify(img1, img2, model_name=args.model, detector_backend=args.detector)
    first_verify_s = time.perf_counter() - first
    import_and_first_s = time.perf_counter() - t0

    rep = []
    for _ in range(args.repeats):
        s = time.perf_counter()
        DeepFace.represent(img1, model_name=args.model, detector_backend=args.detector)
        rep.append((time.perf_counter() - s) * 1000)
    ver = []
    for _ in range(args.repeats):
        s = time.perf_counter()
        DeepFace.verify(img1, img2, model_name=args.model, detector_backend=args.detector)
        ver.append((time.perf_counter() - s) * 1000)
    names = sorted(p.name for p in DATA.iterdir() if p.suffix == ".jpg" and p.name != "invalid.jpg")[: args.images]
    s = time.perf_counter()
    done = 0
    for n in names:
        try:
            DeepFace.represent(str(DATA / n), model_name=args.model, detector_backend=args.detector, enforce_detection=False)
            done += 1
        except Exception:  # noqa: BLE001 — counted as not done
            pass
    sustained = done / (time.perf_counter() - s)
    try:
        import resource
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except Exception:  # noqa: BLE001
        peak_rss_mb = None
    print(json.dumps({
        "impl": "deepface", "model": args.model, "detector": args.detector,
        "represent_ms": {"p50": pct(rep, 50), "p99": pct(rep, 99), "n": len(rep)},
        "verify_ms": {"p50": pct(ver, 50), "p99": pct(ver, 99), "n": len(ver)},
        "sustained_images_per_s": sustained, "sustained_images": done,
        "first_verify_s": first_verify_s, "import_and_first_verify_s": import_and_first_s,
        "peak_rss_mb": peak_rss_mb,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

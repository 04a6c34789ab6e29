#!/usr/bin/env python3
"""DeepFace's side of the library-level benchmark (bench/suites/library.ts): represent of one image,
verify of one pair, and sustained represent throughput over the deepface images, for a model and
detector.

Two modes:
  one-shot (default): runs every detector in --detectors and prints one JSON object;
  --serve: a long-lived worker that reads one JSON command per stdin line and answers one JSON line,
           so the Node harness can interleave DeepFace's cells with ours (TensorFlow is imported once).
           Commands: {"op": "represent"|"verify", "detector": d, "n": k, "max_s": s, "model": m}
                     (k runs, or fewer when s seconds have passed and at least 3 were timed)
                     {"op": "sustained", "detector": d, "images": [names], "max_s": s, "model": m}
                     {"op": "rss"}
           "model" is optional (default: --model); each model is built once, on first use.

Offline tooling: run with the DeepFace venv (/work/venvs/deepface); weights are linked from
../shared/weights into $DEEPFACE_HOME (bench/deepface/weights.py), so nothing is downloaded.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from weights import DATA, link_weights  # noqa: E402


def pct(samples, p):
    s = sorted(samples)
    if not s:
        return None
    i = min(len(s) - 1, max(0, -(-p * len(s) // 100) - 1))
    return s[int(i)]


def peak_rss_mb():
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class Runner:
    def __init__(self, model: str):
        from deepface import DeepFace  # import after DEEPFACE_HOME is set
        self.df = DeepFace
        self.model = model
        self.img1 = str(DATA / "img1.jpg")
        self.img2 = str(DATA / "img2.jpg")
        self.df.build_model(model)
        self.warmed = set()

    def warm(self, detector, model=None):
        # The first call per model and detector pays lazy construction; kept out of the timings.
        model = model or self.model
        if (model, detector) not in self.warmed:
            s = time.perf_counter()
            self.df.verify(self.img1, self.img2, model_name=model, detector_backend=detector)
            self.warmed.add((model, detector))
            return time.perf_counter() - s
        return 0.0

    def _latencies(self, detector, n, max_s, call, model=None):
        """Up to n timed calls (at least 3, then until max_s has passed), in ms, after a warm-up."""
        self.warm(detector, model)
        out = []
        t0 = time.perf_counter()
        for _ in range(n):
            if len(out) >= 3 and time.perf_counter() - t0 > max_s:
                break
            s = time.perf_counter()
            call()
            out.append((time.perf_counter() - s) * 1000)
        return {"samples_ms": out, "p50": pct(out, 50), "p99": pct(out, 99), "n": len(out)}

    def represent(self, detector, n, max_s=1e9, model=None):
        m = model or self.model
        return self._latencies(detector, n, max_s, lambda: self.df.represent(self.img1, model_name=m, detector_backend=detector), m)

    def verify(self, detector, n, max_s=1e9, model=None):
        m = model or self.model
        return self._latencies(
            detector, n, max_s, lambda: self.df.verify(self.img1, self.img2, model_name=m, detector_backend=detector), m
        )

    def sustained(self, detector, images, max_s, model=None):
        model = model or self.model
        self.warm(detector, model)
        s = time.perf_counter()
        done = failed = 0
        for name in images:
            if time.perf_counter() - s > max_s:
                break
            try:
                self.df.represent(str(DATA / name), model_name=model, detector_backend=detector, enforce_detection=False)
                done += 1
            except Exception:  # noqa: BLE001 — counted, not fatal
                failed += 1
        el = time.perf_counter() - s
        return {"images": done, "failed": failed, "seconds": el, "images_per_s": done / el if el > 0 else None}


def haar(names, repeats):
    """OpenCV's own cascade on the images as DeepFace's opencv detector sees them (align=True:
    bordered by half the height and width, then gray), for the stage breakdown of the library suite."""
    import cv2
    import numpy as np
    cascade = cv2.CascadeClassifier(os.path.join(cv2.data.haarcascades, "haarcascade_frontalface_default.xml"))
    out = {}
    for name in names:
        img = cv2.imread(str(DATA / name))
        h, w = img.shape[:2]
        b = cv2.copyMakeBorder(img, int(0.5 * h), int(0.5 * h), int(0.5 * w), int(0.5 * w), cv2.BORDER_CONSTANT, value=[0, 0, 0])
        ts, cpu = [], []
        for _ in range(repeats):
            s = time.perf_counter()
            c = time.process_time()  # every thread of the process: OpenCV's own pool included
            g = cv2.cvtColor(b, cv2.COLOR_BGR2GRAY)
            cascade.detectMultiScale3(g, 1.1, 10, outputRejectLevels=True)
            ts.append((time.perf_counter() - s) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        out[name] = {"p50": pct(ts, 50), "cpu_p50": pct(cpu, 50), "n": len(ts), "threads": cv2.getNumThreads(), "opencv": cv2.__version__}
    return out


def serve(runner: Runner) -> int:
    print(json.dumps({"ready": True, "peak_rss_mb": peak_rss_mb()}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
            op = cmd["op"]
            model = cmd.get("model")
            if op == "represent":
                res = runner.represent(cmd["detector"], int(cmd["n"]), float(cmd.get("max_s", 1e9)), model)
            elif op == "verify":
                res = runner.verify(cmd["detector"], int(cmd["n"]), float(cmd.get("max_s", 1e9)), model)
            elif op == "sustained":
                res = runner.sustained(cmd["detector"], cmd["images"], float(cmd.get("max_s", 60)), model)
            elif op == "haar":
                res = {"images": haar(cmd["images"], int(cmd.get("n", 5)))}
            elif op == "rss":
                res = {}
            elif op == "quit":
                return 0
            else:
                raise ValueError(f"unknown op {op}")
            res["peak_rss_mb"] = peak_rss_mb()
            print(json.dumps(res), flush=True)
        except Exception as err:  # noqa: BLE001 — reported to the harness
            print(json.dumps({"error": str(err)[:300]}), flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detectors", default="opencv")
    ap.add_argument("--model", default="Dlib")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--images", type=int, default=30, help="images for the sustained run")
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    link_weights()
    t0 = time.perf_counter()
    runner = Runner(args.model)
    if args.serve:
        return serve(runner)
    names = sorted(p.name for p in DATA.iterdir() if p.suffix == ".jpg" and p.name != "invalid.jpg")[: args.images]
    out = {"impl": "deepface", "model": args.model, "import_and_build_s": time.perf_counter() - t0, "detectors": {}}
    for det in args.detectors.split(","):
        first = runner.warm(det)
        rep = runner.represent(det, args.repeats)
        ver = runner.verify(det, args.repeats)
        for r in (rep, ver):
            r.pop("samples_ms")
        out["detectors"][det] = {"first_verify_s": first, "represent_ms": rep, "verify_ms": ver,
                                 "sustained": runner.sustained(det, names, 600)}
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

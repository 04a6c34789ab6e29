#!/usr/bin/env python3
"""Where our MTCNN detection of one image first differs from DeepFace's: compares
tools/reference/mtcnn_stages.py's dump (REF.npz) with tools/parity/mtcnn-stages.ts's (OURS_DIR),
stage by stage, and with --onnx runs our ONNX graphs on DeepFace's own stage inputs, so a network's
float32 difference (TensorFlow/PyTorch against ONNX Runtime on the same input) is told apart from
a difference in our pixel or box work.

    python tools/reference/mtcnn_stages_compare.py REF.npz OURS_DIR [--onnx DIR]
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

DT = {"f32": np.float32, "f64": np.float64, "u8": np.uint8}


def load_ours(d: Path) -> dict:
    idx = json.loads((d / "index.json").read_text())
    return {k: np.fromfile(d / v["file"], dtype=DT[v["dtype"]]).reshape(v["shape"]) for k, v in idx["arrays"].items()}


def diff(name, a, b):
    if a.shape != b.shape:
        print(f"{name:16s} SHAPE {a.shape} vs {b.shape}")
        return False
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    n = int((d > 0).sum())
    print(f"{name:16s} {str(a.shape):22s} differ {n:8d}  max {d.max() if d.size else 0:.3g}")
    return n == 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("ours")
    ap.add_argument("--onnx", default="")
    args = ap.parse_args()
    ref = dict(np.load(args.ref))
    ours = load_ours(Path(args.ours))
    bgr = ref["bgr"]
    h, w = ours["decoded"].shape[:2]
    diff("decoded", bgr[h // 2:h // 2 + h, w // 2:w // 2 + w], ours["decoded"])
    k = 0
    while f"level{k}" in ref or f"level{k}" in ours:
        if f"level{k}" not in ref or f"level{k}" not in ours:
            print(f"level{k} only in {'ref' if f'level{k}' in ref else 'ours'}")
            break
        if f"scale{k}" in ref:
            diff(f"scale{k}", ref[f"scale{k}"], ours[f"scale{k}"])
        diff(f"level{k}", ref[f"level{k}"], ours[f"level{k}"])
        diff(f"pnet{k}_prob", ref[f"pnet{k}_prob"], ours[f"pnet{k}_prob"])
        diff(f"pnet{k}_reg", ref[f"pnet{k}_reg"], ours[f"pnet{k}_reg"])
        k += 1
    for name in ["pnet_boxes", "rnet_in", "rnet_reg", "rnet_prob", "rnet_boxes", "onet_in", "onet_reg", "onet_landmarks", "onet_prob"]:
        if name in ref and name in ours and not diff(name, ref[name], ours[name]) and ref[name].shape != ours[name].shape:
            print(f"  ref  {ref[name][:6]}\n  ours {ours[name][:6]}")
    print("faces ref ", ref["faces"][:, :5].tolist(), "\nfaces ours", ours["faces"].tolist())
    if args.onnx:
        import onnxruntime as ort
        s = {n: ort.InferenceSession(str(Path(args.onnx) / f"{n}.onnx"), providers=["CPUExecutionProvider"]) for n in ["pnet", "rnet", "onet"]}
        print("-- our ONNX graphs on DeepFace's inputs (onnxruntime", ort.__version__, ")")
        k = 0
        while f"level{k}" in ref:
            o = s["pnet"].run(None, {s["pnet"].get_inputs()[0].name: ref[f"level{k}"].astype(np.float32)})
            names = [x.name for x in s["pnet"].get_outputs()]
            got = dict(zip(names, o))
            diff(f"pnet{k}_prob*", ref[f"pnet{k}_prob"], got["prob"])
            diff(f"pnet{k}_reg*", ref[f"pnet{k}_reg"], got["reg"])
            k += 1
        for net, outs in [("rnet", ["reg", "prob"]), ("onet", ["reg", "landmarks", "prob"])]:
            x = ref[f"{net}_in"].astype(np.float32)
            if x.shape[0] == 0:
                continue
            got = dict(zip([o.name for o in s[net].get_outputs()], s[net].run(None, {s[net].get_inputs()[0].name: x})))
            for o in outs:
                diff(f"{net}_{o}*", ref[f"{net}_{o}"], got[o])
    return 0


if __name__ == "__main__":
    sys.exit(main())

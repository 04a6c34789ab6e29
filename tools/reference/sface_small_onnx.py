#!/usr/bin/env python3
"""Build a small stand-in for OpenCV Zoo's SFace model, deterministically (numpy + onnx only).

    python tools/reference/sface_small_onnx.py OUT.onnx

Same signature as face_recognition_sface_2021dec.onnx: input `data` float32 [1,3,112,112] (RGB 0..255,
NCHW, as FaceRecognizerSF.feature() feeds it) and output `fc1` float32 [1,128]. The body is a strided conv
plus a dense layer with seeded random weights: linear enough that a one-level change in any pixel, a
channel swap or a scale error moves the output far beyond float tolerance. Used to pin our SFace
preprocessing against OpenCV's own (tools/reference/sface_reference.py, test/sface-parity.test.ts).
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20260405


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(SEED)
    w1 = (rng.standard_normal((8, 3, 4, 4)) / np.sqrt(48) / 255).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((128, 8 * 28 * 28)) / np.sqrt(8 * 28 * 28)).astype(np.float32)
    b2 = (rng.standard_normal(128) * 0.05).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    nodes = [
        helper.make_node("Conv", ["data", "w1", "b1"], ["conv"], kernel_shape=[4, 4], strides=[4, 4]),
        helper.make_node("Flatten", ["conv"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "w2", "b2"], ["fc1"], transB=1),
    ]
    g = helper.make_graph(
        nodes, "sface_small",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 112, 112])],
        [helper.make_tensor_value_info("fc1", TensorProto.FLOAT, [1, 128])],
        initializer=inits,
    )
    # Opset 11 / IR 6: old enough for OpenCV 4.x's DNN importer.
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)], producer_name="facecompute-sface-small")
    m.ir_version = 6
    onnx.checker.check_model(m)
    return m


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: sface_small_onnx.py OUT.onnx", file=sys.stderr)
        return 2
    out = sys.argv[1]
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(build().SerializeToString())
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

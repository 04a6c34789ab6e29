#!/usr/bin/env python3
"""Make face_detection_yunet_2023mar.onnx accept any input size in ONNX Runtime.

    python models/converters/yunet_dynamic_input.py IN.onnx OUT.onnx

The published graph declares its input as 1x3x640x640, which OpenCV's dnn ignores (FaceDetectorYN
feeds the image padded to multiples of 32) but ONNX Runtime enforces. Its Reshapes use -1 and its
Resizes use scales, so only the declared input/output shapes need to become symbolic; weights and
nodes are untouched.
"""
from __future__ import annotations

import sys

import onnx


def make_dynamic(model: onnx.ModelProto) -> onnx.ModelProto:
    inputs = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if len(inputs) != 1:
        raise ValueError("expected exactly one graph input")
    dims = inputs[0].type.tensor_type.shape.dim
    if len(dims) != 4:
        raise ValueError("expected an NCHW input")
    dims[2].ClearField("dim_value")
    dims[2].dim_param = "height"
    dims[3].ClearField("dim_value")
    dims[3].dim_param = "width"
    for out in model.graph.output:
        od = out.type.tensor_type.shape.dim
        if len(od) >= 2:
            od[1].ClearField("dim_value")
            od[1].dim_param = f"{out.name}_cells"
    # Stale inferred shapes of intermediates would contradict the new input size.
    del model.graph.value_info[:]
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: yunet_dynamic_input.py IN.onnx OUT.onnx", file=sys.stderr)
        return 2
    onnx.save(make_dynamic(onnx.load(argv[1])), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Convert biubug6's RetinaFace MobileNet-0.25 weights (mobilenet0.25_Final.pth) to ONNX.

    python models/converters/retinaface_mobilenet_to_onnx.py IN.pth OUT.onnx

Needs numpy and onnx only: PyTorch is not installed in CI, so the legacy (pre-zip) torch.save format
is read here directly (a magic/protocol/sys-info pickle header, the state-dict pickle whose storages
are persistent ids, the list of storage keys, then each storage raw as int64 count + little-endian
data).

The graph is biubug6's `RetinaFace(cfg_mnet, phase='test')` with every BatchNorm folded into the
preceding convolution:
  input   float32 [1, 3, H, W], BGR minus (104, 117, 123) (biubug6's preprocessing; H, W dynamic)
  loc     float32 [1, N, 4]    box deltas per prior (variances 0.1 / 0.2 applied by the decoder)
  conf    float32 [1, N, 2]    softmax (background, face)
  landms  float32 [1, N, 10]   landmark deltas
with N = 2 * sum over strides 8/16/32 of ceil(H/s) * ceil(W/s), priors ordered level, row, column,
anchor size (crates/facecompute-core/src/detect/retinaface.rs generates the same order).
"""
from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from torch_legacy import load_legacy_state_dict

BN_EPS = 1e-5


class _Graph:
    def __init__(self, sd: dict[str, np.ndarray]):
        self.sd = sd
        self.nodes: list = []
        self.inits: list = []
        self.n = 0
        self.used: set[str] = set()

    def _name(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def _get(self, key: str) -> np.ndarray:
        if key not in self.sd:
            raise KeyError(f"missing weight {key}")
        self.used.add(key)
        return self.sd[key]

    def const(self, arr: np.ndarray, base: str) -> str:
        name = self._name(base)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(self, op_type: str, inputs: list[str], base: str, **attrs) -> str:
        out = self._name(base)
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, conv: str, bn: str | None, stride: int, pad: int, groups: int = 1, act: float | None = None) -> str:
        """Conv (+ folded BatchNorm) (+ ReLU when act == 0, LeakyReLU(act) otherwise)."""
        w = self._get(f"{conv}.weight").astype(np.float64)
        b = self.sd.get(f"{conv}.bias")
        if b is not None:
            self.used.add(f"{conv}.bias")
            b = b.astype(np.float64)
        else:
            b = np.zeros(w.shape[0])
        if bn is not None:
            gamma = self._get(f"{bn}.weight").astype(np.float64)
            beta = self._get(f"{bn}.bias").astype(np.float64)
            mean = self._get(f"{bn}.running_mean").astype(np.float64)
            var = self._get(f"{bn}.running_var").astype(np.float64)
            self.used.add(f"{bn}.num_batches_tracked")
            s = gamma / np.sqrt(var + BN_EPS)
            w = w * s[:, None, None, None]
            b = (b - mean) * s + beta
        k = w.shape[2]
        y = self.op(
            "Conv",
            [x, self.const(w.astype(np.float32), "w"), self.const(b.astype(np.float32), "b")],
            "conv",
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad] * 4,
            group=groups,
        )
        if act is None:
            return y
        if act == 0:
            return self.op("Relu", [y], "relu")
        return self.op("LeakyRelu", [y], "lrelu", alpha=float(act))


def build_model(sd: dict[str, np.ndarray]) -> onnx.ModelProto:
    g = _Graph(sd)
    x = "input"

    def conv_bn(x, p, stride, leaky):  # biubug6 conv_bn: 3x3, BN, LeakyReLU(leaky)
        return g.conv_bn(x, f"{p}.0", f"{p}.1", stride, 1, act=leaky)

    def conv_dw(x, p, stride, leaky=0.1):
        cin = sd[f"{p}.0.weight"].shape[0]
        y = g.conv_bn(x, f"{p}.0", f"{p}.1", stride, 1, groups=cin, act=leaky)
        return g.conv_bn(y, f"{p}.3", f"{p}.4", 1, 0, act=leaky)

    # MobileNetV1 (0.25): stage1 -> stride 8, stage2 -> 16, stage3 -> 32.
    y = conv_bn(x, "body.stage1.0", 2, 0.1)
    for i, s in enumerate([1, 2, 1, 2, 1], start=1):
        y = conv_dw(y, f"body.stage1.{i}", s)
    c1 = y
    for i, s in enumerate([2, 1, 1, 1, 1, 1]):
        y = conv_dw(y, f"body.stage2.{i}", s)
    c2 = y
    for i, s in enumerate([2, 1]):
        y = conv_dw(y, f"body.stage3.{i}", s)
    c3 = y

    out_ch = sd["fpn.output1.0.weight"].shape[0]
    leaky = 0.1 if out_ch <= 64 else 0.0
    o1 = g.conv_bn(c1, "fpn.output1.0", "fpn.output1.1", 1, 0, act=leaky)
    o2 = g.conv_bn(c2, "fpn.output2.0", "fpn.output2.1", 1, 0, act=leaky)
    o3 = g.conv_bn(c3, "fpn.output3.0", "fpn.output3.1", 1, 0, act=leaky)

    def upsample_to(src, like):
        # F.interpolate(size=like.shape[2:], mode="nearest") is floor(dst * in / out): asymmetric+floor.
        return g.op(
            "Resize",
            [src, "", "", g.op("Shape", [like], "shape")],
            "up",
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        )

    o2 = g.op("Add", [o2, upsample_to(o3, o2)], "add")
    o2 = conv_bn(o2, "fpn.merge2", 1, leaky)
    o1 = g.op("Add", [o1, upsample_to(o2, o1)], "add")
    o1 = conv_bn(o1, "fpn.merge1", 1, leaky)

    def ssh(x, p):
        a = g.conv_bn(x, f"{p}.conv3X3.0", f"{p}.conv3X3.1", 1, 1)
        b1 = g.conv_bn(x, f"{p}.conv5X5_1.0", f"{p}.conv5X5_1.1", 1, 1, act=leaky)
        b = g.conv_bn(b1, f"{p}.conv5X5_2.0", f"{p}.conv5X5_2.1", 1, 1)
        c2_ = g.conv_bn(b1, f"{p}.conv7X7_2.0", f"{p}.conv7X7_2.1", 1, 1, act=leaky)
        c = g.conv_bn(c2_, f"{p}.conv7x7_3.0", f"{p}.conv7x7_3.1", 1, 1)
        return g.op("Relu", [g.op("Concat", [a, b, c], "cat", axis=1)], "relu")

    feats = [ssh(o1, "ssh1"), ssh(o2, "ssh2"), ssh(o3, "ssh3")]

    def head(kind, width):
        parts = []
        shape = g.const(np.array([0, -1, width], dtype=np.int64), "shape")
        for i, f in enumerate(feats):
            y = g.conv_bn(f, f"{kind}.{i}.conv1x1", None, 1, 0)
            y = g.op("Transpose", [y], "perm", perm=[0, 2, 3, 1])
            parts.append(g.op("Reshape", [y, shape], "reshape"))
        return g.op("Concat", parts, "cat", axis=1)

    loc = head("BboxHead", 4)
    conf = g.op("Softmax", [head("ClassHead", 2)], "softmax", axis=-1)
    landms = head("LandmarkHead", 10)
    g.nodes.append(helper.make_node("Identity", [loc], ["loc"]))
    g.nodes.append(helper.make_node("Identity", [conf], ["conf"]))
    g.nodes.append(helper.make_node("Identity", [landms], ["landms"]))

    unused = sorted(k for k in sd if k not in g.used and not k.startswith("body.fc") and not k.startswith("body.avg"))
    if unused:
        raise ValueError(f"weights not used by the graph (wrong architecture?): {unused[:5]}")

    graph = helper.make_graph(
        g.nodes,
        "retinaface_mobilenet0.25",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, "height", "width"])],
        [
            helper.make_tensor_value_info("loc", TensorProto.FLOAT, [1, "priors", 4]),
            helper.make_tensor_value_info("conf", TensorProto.FLOAT, [1, "priors", 2]),
            helper.make_tensor_value_info("landms", TensorProto.FLOAT, [1, "priors", 10]),
        ],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="facecompute")
    model.ir_version = 8
    model.doc_string = "biubug6 RetinaFace MobileNet-0.25, BN folded; input BGR - (104,117,123), NCHW"
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    sd = load_legacy_state_dict(argv[1])
    model = build_model(sd)
    onnx.save(model, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Convert DeepFace's weights-only Keras .h5 files to ONNX without TensorFlow.

The .h5 files hold weights only, so this script rebuilds each network graph itself (the same
architectures DeepFace builds in Keras), reads every tensor by layer name with h5py, folds batch norms
into the preceding convolution / dense layer, and writes ONNX with numpy + onnx only.

    python models/converters/keras_to_onnx.py --arch facenet128|facenet512|openface|retinaface_r50 \
        [--expect-fingerprint HEX] IN.h5 OUT.onnx
    python models/converters/keras_to_onnx.py --print-fingerprint IN.h5

Content fingerprint (`--expect-fingerprint`, `--print-fingerprint`): the sha256 over every weight array
as float32 little-endian, concatenated in the order of the `layer_names` attribute of the weights group
(`model_weights` in a full-model save, the root in a `save_weights` file) and, within each layer, in the
order of its `weight_names` attribute. It names the weight values, not the file: a full-model save and a
weights-only save of the same model give the same fingerprint, whatever their layer names. With
`--expect-fingerprint`, a file that gives another one is refused (exit status 3) before any conversion.

Recognition models: input `input`, NHWC float32 [N,H,W,3], BGR in [0,1] (exactly what DeepFace feeds with
normalization="base"); output `embedding` [N,D].

retinaface_r50: input `input`, NHWC float32 [N,H,W,3], RGB 0..255 (what retina-face feeds), any H and W;
outputs, for stride s in 32, 16, 8 (all NHWC, like the Keras model's outputs):
    cls_prob_s{s}   [N, H/s, W/s, 4]   softmax over (background, face) per anchor; channels 0..1 are the
                                        background scores of anchors 0,1 and 2..3 the face scores
    bbox_pred_s{s}  [N, H/s, W/s, 8]   4 box deltas (dx, dy, dw, dh) per anchor
    landmark_pred_s{s} [N, H/s, W/s, 20]  5 (x, y) landmark deltas per anchor
(H/s rounds up, following the Keras 'same'/padded convolutions.) The order of outputs is the order of
the Keras model's outputs (stride 32 cls, bbox, landmark, then 16, then 8).

Tensors are found by layer name. If the file names its layers differently, they are paired by position
with the model's layer order from keras_layouts/<arch>.json (DeepFace's own Keras `save_weights` layout),
which is how Keras's `load_weights` (and so DeepFace) reads them anyway.

Exit status: 0 on success, 2 on usage errors, 1 when the weights do not match the architecture (missing
layer, wrong shape, unused layers), 3 when the content fingerprint is not the expected one. The output is written to a temporary file and renamed, so a failed
run never leaves a partial model behind.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

import h5py
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
KNOWN_KINDS = {"kernel", "bias", "gamma", "beta", "moving_mean", "moving_variance"}
LAYOUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_layouts")


class ConversionError(Exception):
    pass


class FingerprintMismatch(ConversionError):
    pass


def fingerprint(path: str) -> Tuple[str, int]:
    """The content fingerprint of a Keras HDF5 file (module docstring) and the number of values."""
    import hashlib

    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ConversionError(f"cannot open {path} as HDF5: {e}") from e
    with f:
        root = f["model_weights"] if "model_weights" in f else f
        names = root.attrs.get("layer_names")
        if names is None:
            raise ConversionError(f"{path}: no 'layer_names' attribute; not a Keras weights file")
        h = hashlib.sha256()
        count = 0
        for raw in names:
            layer = raw.decode() if isinstance(raw, bytes) else str(raw)
            if layer not in root:
                continue
            g = root[layer]
            for wraw in g.attrs.get("weight_names", []):
                arr = np.ascontiguousarray(np.asarray(g[wraw.decode() if isinstance(wraw, bytes) else str(wraw)], dtype="<f4"))
                h.update(arr.tobytes())
                count += arr.size
        return h.hexdigest(), count


# ---------------------------------------------------------------------------------------------------
# Weights


class KerasWeights:
    """Tensors of a Keras HDF5 weights file, by layer name.

    Handles both `save_weights` files (layers at the root) and full-model saves (under `model_weights`).
    Within a layer, tensors come in the file's `weight_names` order, which is the order Keras itself
    assigns them on load; names are checked by suffix so that a renamed layer prefix still works.
    """

    def __init__(self, path: str):
        try:
            self._f = h5py.File(path, "r")
        except OSError as e:
            raise ConversionError(f"cannot open {path} as HDF5: {e}") from e
        root = self._f["model_weights"] if "model_weights" in self._f else self._f
        self._root = root
        names = root.attrs.get("layer_names")
        if names is None:
            raise ConversionError(f"{path}: no 'layer_names' attribute; not a Keras weights file")
        self.layer_names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
        self._used: set = set()
        self._alias: Dict[str, str] = {}

    def _has_weights(self, name: str) -> bool:
        return name in self._root and len(self._root[name].attrs.get("weight_names", [])) > 0

    def match_layout(self, layout_path: str) -> Optional[str]:
        """When the file names its layers differently from DeepFace's current code, pair them by position.

        That is what DeepFace itself does: Keras's HDF5 `load_weights` ignores names and assigns the
        file's weighted layers, in order, to the model's weighted layers. The committed layout (the Keras
        model's own `save_weights` layout) gives the model's order. Shapes are still checked per tensor.
        Returns a note for the user when it had to do so.
        """
        if not os.path.isfile(layout_path):
            return None
        with open(layout_path) as f:
            layout = json.load(f)
        expected = [l["name"] for l in layout["layers"] if l["weights"]]
        present = [n for n in self.layer_names if self._has_weights(n)]
        if all(n in self._root for n in expected):
            return None
        if len(expected) != len(present):
            return (f"layer names differ from DeepFace's and the file has {len(present)} weighted layers where "
                    f"the architecture has {len(expected)}; cannot pair them by position")
        self._alias = dict(zip(expected, present))
        return "layer names differ from DeepFace's; paired weighted layers by position, as Keras load_weights does"

    def close(self) -> None:
        self._f.close()

    def layer(self, name: str, expect: Sequence[Tuple[str, Tuple[int, ...]]]) -> List[np.ndarray]:
        file_name = self._alias.get(name, name)
        if file_name not in self._root:
            raise ConversionError(f"missing layer '{name}' in weights file")
        g = self._root[file_name]
        label = name if file_name == name else f"{name}' (file: '{file_name}"
        wn = [n.decode() if isinstance(n, bytes) else str(n) for n in g.attrs.get("weight_names", [])]
        if len(wn) != len(expect):
            raise ConversionError(
                f"layer '{label}': expected {len(expect)} tensors ({', '.join(k for k, _ in expect)}), "
                f"file has {len(wn)} ({', '.join(wn)})"
            )
        out = []
        for full, (kind, shape) in zip(wn, expect):
            leaf = full.split("/")[-1].split(":")[0]
            # Keras assigns a layer's tensors by position; names only catch a swapped order when they use
            # the standard kinds (very old files use other names, e.g. param_0).
            if leaf in KNOWN_KINDS and leaf != kind:
                raise ConversionError(f"layer '{label}': expected tensor '{kind}', file has '{full}'")
            arr = np.asarray(g[full], dtype=np.float32)
            if tuple(arr.shape) != tuple(shape):
                raise ConversionError(
                    f"layer '{label}' tensor '{kind}': shape mismatch, expected {tuple(shape)}, file has {arr.shape}"
                )
            out.append(arr)
        self._used.add(file_name)
        return out

    def check_all_used(self) -> None:
        unused = []
        for n in self.layer_names:
            if n in self._used:
                continue
            g = self._root[n] if n in self._root else None
            if g is not None and len(g.attrs.get("weight_names", [])) > 0:
                unused.append(n)
        if unused:
            raise ConversionError(
                f"{len(unused)} layer(s) with weights are not part of this architecture: {', '.join(unused[:8])}"
                + (" ..." if len(unused) > 8 else "")
            )


# ---------------------------------------------------------------------------------------------------
# Graph builder (NCHW inside; one Transpose at the input)


class Graph:
    def __init__(self) -> None:
        self.nodes: List[onnx.NodeProto] = []
        self.inits: List[onnx.TensorProto] = []
        self._n = 0

    def _name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, arr: np.ndarray, base: str = "c") -> str:
        name = self._name(base)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], base: Optional[str] = None, outputs: Optional[List[str]] = None,
           **attrs) -> str:
        outs = outputs or [self._name(base or op_type.lower())]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0]

    def model(self, inputs: List[onnx.ValueInfoProto], outputs: List[onnx.ValueInfoProto], name: str) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="facecompute-keras_to_onnx")
        m.ir_version = 8
        return m


def fold_bn(kernel_oihw: np.ndarray, bias: Optional[np.ndarray], bn: Dict[str, np.ndarray], eps: float):
    """Batch norm in inference mode after a conv/dense: y = gamma*(x-mean)/sqrt(var+eps) + beta."""
    mean = bn["moving_mean"].astype(np.float64)
    var = bn["moving_variance"].astype(np.float64)
    gamma = bn.get("gamma")
    gamma = np.ones_like(mean) if gamma is None else gamma.astype(np.float64)
    beta = bn.get("beta")
    beta = np.zeros_like(mean) if beta is None else beta.astype(np.float64)
    s = gamma / np.sqrt(var + eps)
    b = np.zeros_like(mean) if bias is None else bias.astype(np.float64)
    k = kernel_oihw.astype(np.float64) * s.reshape((-1,) + (1,) * (kernel_oihw.ndim - 1))
    return k.astype(np.float32), ((b - mean) * s + beta).astype(np.float32)


def bn_expect(name_has: Sequence[str], c: int) -> List[Tuple[str, Tuple[int, ...]]]:
    return [(k, (c,)) for k in name_has]


class Builder:
    def __init__(self, w: KerasWeights, g: Graph):
        self.w = w
        self.g = g

    def conv(self, x: str, cin: int, name: str, filters: int, k: Tuple[int, int], stride: int = 1,
             pads: Tuple[int, int, int, int] = (0, 0, 0, 0), same_upper: bool = False, bias: bool = True,
             bn: Optional[str] = None, bn_eps: float = 1e-3, bn_scale: bool = True, bn_center: bool = True,
             relu: bool = False) -> str:
        """Keras Conv2D (+ optional BatchNormalization folded in, + ReLU). pads: top, left, bottom, right."""
        exp = [("kernel", (k[0], k[1], cin, filters))]
        if bias:
            exp.append(("bias", (filters,)))
        t = self.w.layer(name, exp)
        kern = np.transpose(t[0], (3, 2, 0, 1))  # HWIO -> OIHW
        b = t[1] if bias else None
        if bn is not None:
            keys = (["gamma"] if bn_scale else []) + (["beta"] if bn_center else []) + ["moving_mean", "moving_variance"]
            vals = self.w.layer(bn, bn_expect(keys, filters))
            kern, b = fold_bn(kern, b, dict(zip(keys, vals)), bn_eps)
        if b is None:
            b = np.zeros((filters,), np.float32)
        attrs = dict(kernel_shape=list(k), strides=[stride, stride])
        if same_upper:
            # TF 'same' puts the odd padding pixel at the bottom/right, as SAME_UPPER does, for any input size.
            attrs["auto_pad"] = "SAME_UPPER"
        else:
            attrs["pads"] = [pads[0], pads[1], pads[2], pads[3]]
        y = self.g.op("Conv", [x, self.g.const(kern, name + "_W"), self.g.const(b, name + "_B")], base=name, **attrs)
        return self.g.op("Relu", [y]) if relu else y

    def bn(self, x: str, name: str, c: int, eps: float, scale: bool = True, center: bool = True) -> str:
        keys = (["gamma"] if scale else []) + (["beta"] if center else []) + ["moving_mean", "moving_variance"]
        vals = dict(zip(keys, self.w.layer(name, bn_expect(keys, c))))
        mean = vals["moving_mean"].astype(np.float64)
        s = (vals["gamma"].astype(np.float64) if scale else 1.0) / np.sqrt(vals["moving_variance"].astype(np.float64) + eps)
        sh = (s * 1.0).astype(np.float32).reshape(1, c, 1, 1)
        beta = vals["beta"].astype(np.float64) if center else 0.0
        bias = (beta - mean * s).astype(np.float32).reshape(1, c, 1, 1)
        y = self.g.op("Mul", [x, self.g.const(sh, name + "_s")])
        return self.g.op("Add", [y, self.g.const(bias, name + "_b")], base=name)

    def pad(self, x: str, top: int, left: int, bottom: int, right: int) -> str:
        p = np.array([0, 0, top, left, 0, 0, bottom, right], np.int64)
        return self.g.op("Pad", [x, self.g.const(p, "pads")], mode="constant")

    def maxpool(self, x: str, k: int, s: int, same_upper: bool = False) -> str:
        attrs = dict(kernel_shape=[k, k], strides=[s, s])
        if same_upper:
            attrs["auto_pad"] = "SAME_UPPER"
        return self.g.op("MaxPool", [x], **attrs)

    def scale(self, x: str, v: float) -> str:
        return self.g.op("Mul", [x, self.g.const(np.array(v, np.float32), "scale")])


def nhwc_input(g: Graph, h: Optional[int], w: Optional[int]) -> Tuple[str, onnx.ValueInfoProto]:
    vi = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", h if h else "H", w if w else "W", 3])
    x = g.op("Transpose", ["input"], base="to_nchw", perm=[0, 3, 1, 2])
    return x, vi


# ---------------------------------------------------------------------------------------------------
# Facenet (InceptionResNetV1, DeepFace's Facenet.py)

FN_EPS = 1e-3


def build_facenet(w: KerasWeights, dim: int) -> onnx.ModelProto:
    g = Graph()
    b = Builder(w, g)
    x, vin = nhwc_input(g, 160, 160)

    def cbr(x, cin, name, f, k, s=1, same=False):
        kk = (k, k) if isinstance(k, int) else k
        return b.conv(x, cin, name, f, kk, s, same_upper=same, bias=False, bn=name + "_BatchNorm",
                      bn_eps=FN_EPS, bn_scale=False, relu=True)

    x = cbr(x, 3, "Conv2d_1a_3x3", 32, 3, 2)
    x = cbr(x, 32, "Conv2d_2a_3x3", 32, 3)
    x = cbr(x, 32, "Conv2d_2b_3x3", 64, 3, same=True)
    x = b.maxpool(x, 3, 2)
    x = cbr(x, 64, "Conv2d_3b_1x1", 80, 1)
    x = cbr(x, 80, "Conv2d_4a_3x3", 192, 3)
    x = cbr(x, 192, "Conv2d_4b_3x3", 256, 3, 2)

    def residual(x, c, p, mixed, cmixed, scale, relu):
        up = b.conv(mixed, cmixed, p + "_Conv2d_1x1", c, (1, 1), same_upper=True, bias=True)
        if scale != 1:
            up = b.scale(up, scale)
        x = g.op("Add", [x, up])
        return g.op("Relu", [x]) if relu else x

    for i in range(1, 6):
        p = f"Block35_{i}"
        b0 = cbr(x, 256, p + "_Branch_0_Conv2d_1x1", 32, 1, same=True)
        b1 = cbr(x, 256, p + "_Branch_1_Conv2d_0a_1x1", 32, 1, same=True)
        b1 = cbr(b1, 32, p + "_Branch_1_Conv2d_0b_3x3", 32, 3, same=True)
        b2 = cbr(x, 256, p + "_Branch_2_Conv2d_0a_1x1", 32, 1, same=True)
        b2 = cbr(b2, 32, p + "_Branch_2_Conv2d_0b_3x3", 32, 3, same=True)
        b2 = cbr(b2, 32, p + "_Branch_2_Conv2d_0c_3x3", 32, 3, same=True)
        mixed = g.op("Concat", [b0, b1, b2], axis=1)
        x = residual(x, 256, p, mixed, 96, 0.17, True)

    b0 = cbr(x, 256, "Mixed_6a_Branch_0_Conv2d_1a_3x3", 384, 3, 2)
    b1 = cbr(x, 256, "Mixed_6a_Branch_1_Conv2d_0a_1x1", 192, 1, same=True)
    b1 = cbr(b1, 192, "Mixed_6a_Branch_1_Conv2d_0b_3x3", 192, 3, same=True)
    b1 = cbr(b1, 192, "Mixed_6a_Branch_1_Conv2d_1a_3x3", 256, 3, 2)
    b2 = b.maxpool(x, 3, 2)
    x = g.op("Concat", [b0, b1, b2], axis=1)  # 896

    for i in range(1, 11):
        p = f"Block17_{i}"
        # DeepFace numbers the second branch after the block (Block17_3_Branch_3_...), except in block 1.
        br = f"{p}_Branch_{i}"
        b0 = cbr(x, 896, p + "_Branch_0_Conv2d_1x1", 128, 1, same=True)
        b1 = cbr(x, 896, br + "_Conv2d_0a_1x1", 128, 1, same=True)
        b1 = cbr(b1, 128, br + "_Conv2d_0b_1x7", 128, (1, 7), same=True)
        b1 = cbr(b1, 128, br + "_Conv2d_0c_7x1", 128, (7, 1), same=True)
        mixed = g.op("Concat", [b0, b1], axis=1)
        x = residual(x, 896, p, mixed, 256, 0.1, True)

    b0 = cbr(x, 896, "Mixed_7a_Branch_0_Conv2d_0a_1x1", 256, 1, same=True)
    b0 = cbr(b0, 256, "Mixed_7a_Branch_0_Conv2d_1a_3x3", 384, 3, 2)
    b1 = cbr(x, 896, "Mixed_7a_Branch_1_Conv2d_0a_1x1", 256, 1, same=True)
    b1 = cbr(b1, 256, "Mixed_7a_Branch_1_Conv2d_1a_3x3", 256, 3, 2)
    b2 = cbr(x, 896, "Mixed_7a_Branch_2_Conv2d_0a_1x1", 256, 1, same=True)
    b2 = cbr(b2, 256, "Mixed_7a_Branch_2_Conv2d_0b_3x3", 256, 3, same=True)
    b2 = cbr(b2, 256, "Mixed_7a_Branch_2_Conv2d_1a_3x3", 256, 3, 2)
    b3 = b.maxpool(x, 3, 2)
    x = g.op("Concat", [b0, b1, b2, b3], axis=1)  # 1792

    for i in range(1, 7):
        p = f"Block8_{i}"
        # Same naming quirk as Block17, for blocks 2..5; block 6 goes back to Branch_1.
        br = f"{p}_Branch_{i if 1 < i < 6 else 1}"
        b0 = cbr(x, 1792, p + "_Branch_0_Conv2d_1x1", 192, 1, same=True)
        b1 = cbr(x, 1792, br + "_Conv2d_0a_1x1", 192, 1, same=True)
        b1 = cbr(b1, 192, br + "_Conv2d_0b_1x3", 192, (1, 3), same=True)
        b1 = cbr(b1, 192, br + "_Conv2d_0c_3x1", 192, (3, 1), same=True)
        mixed = g.op("Concat", [b0, b1], axis=1)
        # The last block has scale 1 and no activation (Sandberg's noReLU block).
        x = residual(x, 1792, p, mixed, 384, 0.2 if i < 6 else 1.0, i < 6)

    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    # Dropout is the identity at inference. Bottleneck (no bias) + BatchNorm (no scale) fold into one Gemm.
    (kern,) = w.layer("Bottleneck", [("kernel", (1792, dim))])
    keys = ["beta", "moving_mean", "moving_variance"]
    bnv = dict(zip(keys, w.layer("Bottleneck_BatchNorm", bn_expect(keys, dim))))
    k_oi, bias = fold_bn(kern.T, None, bnv, FN_EPS)
    g.op("Gemm", [x, g.const(k_oi, "Bottleneck_W"), g.const(bias, "Bottleneck_B")], outputs=["embedding"], transB=1)
    vout = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["N", dim])
    return g.model([vin], [vout], f"facenet{dim}")


# ---------------------------------------------------------------------------------------------------
# OpenFace (nn4.small2, DeepFace's OpenFace.py)

OF_EPS = 1e-5


def build_openface(w: KerasWeights) -> onnx.ModelProto:
    g = Graph()
    b = Builder(w, g)
    x, vin = nhwc_input(g, 96, 96)

    def cbr(x, cin, conv, bn, f, k, s=1, p=0):
        pp = (p, p, p, p) if isinstance(p, int) else p
        return b.conv(x, cin, conv, f, (k, k), s, pads=pp, bias=True, bn=bn, bn_eps=OF_EPS, relu=True)

    def lrn(x, c):
        # tf.nn.lrn defaults: x / (1 + 1e-4 * sum_{|d| <= 5} x[c+d]^2)^0.75. ONNX Runtime's LRN kernel took
        # over half of OpenFace's time, so the window sum is a 1x1 convolution with a banded 0/1 matrix
        # (fast GEMM) and the rest is element-wise.
        band = (np.abs(np.arange(c)[:, None] - np.arange(c)[None, :]) <= 5).astype(np.float32)
        sq = g.op("Mul", [x, x])
        win = g.op("Conv", [sq, g.const(band.reshape(c, c, 1, 1), "lrn_band")], kernel_shape=[1, 1])
        d = g.op("Add", [b.scale(win, 1e-4), g.const(np.array(1.0, np.float32), "one")])
        # d^0.75 = sqrt(d) * sqrt(sqrt(d)): two Sqrt ops are much cheaper than Pow here.
        r = g.op("Sqrt", [d])
        return g.op("Div", [x, g.op("Mul", [r, g.op("Sqrt", [r])])])

    def l2pool(x):
        # Keras: x**2 -> AveragePooling2D(3, 3) -> *9 -> sqrt (an L2 pool written with layers)
        y = g.op("Mul", [x, x])
        y = g.op("AveragePool", [y], kernel_shape=[3, 3], strides=[3, 3])
        y = b.scale(y, 9.0)
        return g.op("Sqrt", [y])

    x = cbr(x, 3, "conv1", "bn1", 64, 7, 2, 3)
    x = b.pad(x, 1, 1, 1, 1)
    x = b.maxpool(x, 3, 2)
    x = lrn(x, 64)
    x = cbr(x, 64, "conv2", "bn2", 64, 1)
    x = cbr(x, 64, "conv3", "bn3", 192, 3, 1, 1)
    x = lrn(x, 192)
    x = b.pad(x, 1, 1, 1, 1)
    x = b.maxpool(x, 3, 2)  # 12x12x192

    def unit(x, cin, pre, f, k, s=1, pad=0, suffix=""):
        return cbr(x, cin, f"{pre}_conv{suffix}", f"{pre}_bn{suffix}", f, k, s, pad)

    # 3a
    a = unit(x, 192, "inception_3a_3x3", 96, 1, suffix="1")
    a = unit(a, 96, "inception_3a_3x3", 128, 3, pad=1, suffix="2")
    bb = unit(x, 192, "inception_3a_5x5", 16, 1, suffix="1")
    bb = unit(bb, 16, "inception_3a_5x5", 32, 5, pad=2, suffix="2")
    p = b.maxpool(x, 3, 2)
    p = unit(p, 192, "inception_3a_pool", 32, 1)
    p = b.pad(p, 3, 3, 4, 4)
    o = unit(x, 192, "inception_3a_1x1", 64, 1)
    x = g.op("Concat", [a, bb, p, o], axis=1)  # 256
    # 3b
    a = unit(x, 256, "inception_3b_3x3", 96, 1, suffix="1")
    a = unit(a, 96, "inception_3b_3x3", 128, 3, pad=1, suffix="2")
    bb = unit(x, 256, "inception_3b_5x5", 32, 1, suffix="1")
    bb = unit(bb, 32, "inception_3b_5x5", 64, 5, pad=2, suffix="2")
    p = l2pool(x)
    p = unit(p, 256, "inception_3b_pool", 64, 1)
    p = b.pad(p, 4, 4, 4, 4)
    o = unit(x, 256, "inception_3b_1x1", 64, 1)
    x = g.op("Concat", [a, bb, p, o], axis=1)  # 320
    # 3c
    a = unit(x, 320, "inception_3c_3x3", 128, 1, suffix="1")
    a = unit(a, 128, "inception_3c_3x3", 256, 3, s=2, pad=1, suffix="2")
    bb = unit(x, 320, "inception_3c_5x5", 32, 1, suffix="1")
    bb = unit(bb, 32, "inception_3c_5x5", 64, 5, s=2, pad=2, suffix="2")
    p = b.maxpool(x, 3, 2)
    p = b.pad(p, 0, 0, 1, 1)
    x = g.op("Concat", [a, bb, p], axis=1)  # 640
    # 4a
    a = unit(x, 640, "inception_4a_3x3", 96, 1, suffix="1")
    a = unit(a, 96, "inception_4a_3x3", 192, 3, pad=1, suffix="2")
    bb = unit(x, 640, "inception_4a_5x5", 32, 1, suffix="1")
    bb = unit(bb, 32, "inception_4a_5x5", 64, 5, pad=2, suffix="2")
    p = l2pool(x)
    p = unit(p, 640, "inception_4a_pool", 128, 1)
    p = b.pad(p, 2, 2, 2, 2)
    o = unit(x, 640, "inception_4a_1x1", 256, 1)
    x = g.op("Concat", [a, bb, p, o], axis=1)  # 640
    # 4e
    a = unit(x, 640, "inception_4e_3x3", 160, 1, suffix="1")
    a = unit(a, 160, "inception_4e_3x3", 256, 3, s=2, pad=1, suffix="2")
    bb = unit(x, 640, "inception_4e_5x5", 64, 1, suffix="1")
    bb = unit(bb, 64, "inception_4e_5x5", 128, 5, s=2, pad=2, suffix="2")
    p = b.maxpool(x, 3, 2)
    p = b.pad(p, 0, 0, 1, 1)
    x = g.op("Concat", [a, bb, p], axis=1)  # 1024
    # 5a
    a = unit(x, 1024, "inception_5a_3x3", 96, 1, suffix="1")
    a = unit(a, 96, "inception_5a_3x3", 384, 3, pad=1, suffix="2")
    p = l2pool(x)
    p = unit(p, 1024, "inception_5a_pool", 96, 1)
    p = b.pad(p, 1, 1, 1, 1)
    o = unit(x, 1024, "inception_5a_1x1", 256, 1)
    x = g.op("Concat", [a, p, o], axis=1)  # 736
    # 5b
    a = unit(x, 736, "inception_5b_3x3", 96, 1, suffix="1")
    a = unit(a, 96, "inception_5b_3x3", 384, 3, pad=1, suffix="2")
    p = b.maxpool(x, 3, 2)
    p = unit(p, 736, "inception_5b_pool", 96, 1)
    p = b.pad(p, 1, 1, 1, 1)
    o = unit(x, 736, "inception_5b_1x1", 256, 1)
    x = g.op("Concat", [a, p, o], axis=1)  # 736, 3x3
    x = g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1])
    # Keras flattens NHWC; at 1x1 spatial this equals the NCHW flatten, but transpose anyway so the
    # Dense kernel rows always line up with Keras's order.
    x = g.op("Transpose", [x], perm=[0, 2, 3, 1])
    x = g.op("Flatten", [x], axis=1)
    kern, bias = w.layer("dense_layer", [("kernel", (736, 128)), ("bias", (128,))])
    x = g.op("Gemm", [x, g.const(kern.T.copy(), "dense_W"), g.const(bias, "dense_B")], transB=1)
    # K.l2_normalize: x / sqrt(max(sum(x^2), 1e-12))
    ss = g.op("ReduceSumSquare", [x], axes=[1], keepdims=1)
    ss = g.op("Max", [ss, g.const(np.array(1e-12, np.float32), "eps")])
    g.op("Div", [x, g.op("Sqrt", [ss])], outputs=["embedding"])
    vout = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["N", 128])
    return g.model([vin], [vout], "openface")


# ---------------------------------------------------------------------------------------------------

ARCHS = {
    "facenet128": lambda w: build_facenet(w, 128),
    "facenet512": lambda w: build_facenet(w, 512),
    "openface": build_openface,
}


def _register_retinaface() -> None:
    try:
        from retinaface_r50 import build_retinaface_r50  # type: ignore
    except ImportError:
        return
    ARCHS["retinaface_r50"] = build_retinaface_r50


def convert(arch: str, src: str, dst: str, expect_fingerprint: Optional[str] = None) -> None:
    if expect_fingerprint is not None:
        got, count = fingerprint(src)
        if got != expect_fingerprint.lower():
            raise FingerprintMismatch(
                f"content fingerprint mismatch: expected {expect_fingerprint.lower()}, the file gives {got} "
                f"({count} values); these are not the weights the manifest names"
            )
    w = KerasWeights(src)
    note = w.match_layout(os.path.join(LAYOUT_DIR, f"{arch}.json"))
    if note:
        print(f"keras_to_onnx: {arch}: {note}", file=sys.stderr)
    try:
        model = ARCHS[arch](w)
        w.check_all_used()
    finally:
        w.close()
    onnx.checker.check_model(model)
    out_dir = os.path.dirname(os.path.abspath(dst))
    os.makedirs(out_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".keras_to_onnx.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    try:
        with open(tmp, "wb") as f:
            f.write(model.SerializeToString())
        # mkstemp creates 0600; give the model the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv: Optional[Sequence[str]] = None) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    # Run as a script, this module is __main__; make `import keras_to_onnx` in the architecture modules
    # return this same module, so there is one ConversionError class.
    sys.modules.setdefault("keras_to_onnx", sys.modules[__name__])
    _register_retinaface()
    ap = argparse.ArgumentParser(description="Convert DeepFace Keras weights (.h5) to ONNX, without TensorFlow.")
    ap.add_argument("--arch", choices=sorted(ARCHS))
    ap.add_argument("--expect-fingerprint", metavar="HEX", help="refuse a file whose content fingerprint differs")
    ap.add_argument("--print-fingerprint", action="store_true", help="print the content fingerprint of SRC and exit")
    ap.add_argument("src", help="Keras weights file (.h5)")
    ap.add_argument("dst", nargs="?", help="ONNX file to write")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.src):
        print(f"keras_to_onnx: no such file: {args.src}", file=sys.stderr)
        return 2
    if args.print_fingerprint:
        try:
            digest, count = fingerprint(args.src)
        except ConversionError as e:
            print(f"keras_to_onnx: {args.src}: {e}", file=sys.stderr)
            return 1
        print(f"{digest} {count}")
        return 0
    if args.arch is None or args.dst is None:
        ap.error("--arch, SRC and DST are required to convert")
    if args.expect_fingerprint is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", args.expect_fingerprint):
        ap.error("--expect-fingerprint takes 64 hex digits")
    try:
        convert(args.arch, args.src, args.dst, args.expect_fingerprint)
    except FingerprintMismatch as e:
        print(f"keras_to_onnx: {args.arch}: {args.src}: {e}", file=sys.stderr)
        return 3
    except ConversionError as e:
        print(f"keras_to_onnx: {args.arch}: {args.src}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

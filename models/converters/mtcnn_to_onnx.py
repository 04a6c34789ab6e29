#!/usr/bin/env python3
"""Convert the MTCNN weights DeepFace's two MTCNN detectors load into three ONNX graphs.

    python models/converters/mtcnn_to_onnx.py --flavor mtcnn|facenet-pytorch \
        [--expect-fingerprint HEX]x3 PNET RNET ONET OUT_DIR
    python models/converters/mtcnn_to_onnx.py --flavor ... --print-fingerprint PNET RNET ONET

Flavors and the files they read, without TensorFlow or PyTorch:
  mtcnn            PyPI mtcnn 1.0.0's mtcnn/assets/weights/{pnet,rnet,onet}.lz4: joblib pickles in an LZ4
                   frame; each holds the list of arrays Keras' get_weights() gives (kernels HWIO, dense
                   kernels [in, out], PReLU alphas [1, 1, C]). The pickle stream is read by a restricted
                   unpickler that knows joblib's NumpyArrayWrapper (the array bytes follow its BUILD
                   opcode in the stream, after one alignment byte and that many padding bytes).
  facenet-pytorch  PyPI facenet-pytorch 2.6.0's facenet_pytorch/data/{pnet,rnet,onet}.pt: legacy
                   torch.save state dicts (torch_legacy.py).

Both are the same network family (Zhang et al.'s Caffe MTCNN, converted twice): PNet 12x12 fully
convolutional, RNet 24x24, ONet 48x48. They differ in their pooling (Keras 'same' padding vs PyTorch
ceil_mode), which the graphs reproduce. Every graph takes NCHW float32 RGB, already normalised by the
caller (crates/facecompute-core/src/detect/mtcnn), and has a dynamic batch:
  pnet.onnx  input [N, 3, H, W]    -> reg [N, 4, h, w], prob [N, 2, h, w]
  rnet.onnx  input [N, 3, 24, 24]  -> reg [N, 4], prob [N, 2]
  onet.onnx  input [N, 3, 48, 48]  -> reg [N, 4], landmarks [N, 10], prob [N, 2]
`prob` is the softmax over (not face, face); the dense layers see the feature map transposed to
[N, W, H, C] before flattening, as both originals do (Keras Permute((2,1,3)) on NHWC; PyTorch
permute(0,3,2,1) on NCHW).

Content fingerprint (one per file): the sha256 over every array as float32 little-endian, concatenated
in the file's own order (the get_weights() list; the state dict's key order). With --expect-fingerprint
(given three times, PNet, RNet, ONet) a file that gives another one is refused with exit status 3 before
anything is converted. Exit status 1: the file is unreadable or does not have the expected layout.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from torch_legacy import load_legacy_state_dict

NETS = ("pnet", "rnet", "onet")
FINGERPRINT_EXIT = 3


class ConversionError(Exception):
    pass


class FingerprintMismatch(ConversionError):
    pass


# ---------------------------------------------------------------------------------------------------
# mtcnn 1.0.0: joblib pickles in an LZ4 frame


class _ArrayWrapper:
    """Stands for joblib.numpy_pickle.NumpyArrayWrapper: only its state is kept (shape, dtype, order)."""

    def __setstate__(self, state):
        self.state = state


class _JoblibUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """The pure-Python unpickler (its BUILD opcode can be intercepted and the stream read after it),
    resolving the few globals a joblib array list needs; any other global is refused."""

    def __init__(self, fh):
        super().__init__(fh)
        self._fh = fh

    def find_class(self, module, name):
        if module == "joblib.numpy_pickle" and name == "NumpyArrayWrapper":
            return _ArrayWrapper
        if module == "numpy" and name == "ndarray":
            return np.ndarray
        if module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray") and name == "dtype":
            return np.dtype
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")

    def load_build(self):
        pickle._Unpickler.load_build(self)  # type: ignore[attr-defined]
        top = self.stack[-1]
        if isinstance(top, _ArrayWrapper):
            # joblib writes the array's bytes straight to the file after the frame that ends here.
            self.stack[-1] = _read_array(self._fh, top.state)

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]
    dispatch[pickle.BUILD[0]] = load_build


def _read_array(f, state) -> np.ndarray:
    dtype = np.dtype(state["dtype"])
    if dtype.hasobject:
        raise pickle.UnpicklingError("object arrays are refused")
    shape = tuple(int(n) for n in state["shape"])
    if state.get("numpy_array_alignment_bytes") is not None:
        pad = f.read(1)
        if len(pad) != 1:
            raise ConversionError("truncated array header")
        f.read(pad[0])
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    raw = f.read(count * dtype.itemsize)
    if len(raw) != count * dtype.itemsize:
        raise ConversionError("truncated array data")
    arr = np.frombuffer(raw, dtype=dtype)
    if state.get("order", "C") == "F":
        return arr.reshape(shape[::-1]).transpose().copy()
    return arr.reshape(shape).copy()


def load_joblib_lz4(path: str) -> list[np.ndarray]:
    import io

    import lz4.frame

    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x04\x22\x4d\x18":
        raise ConversionError(f"{path}: not an LZ4 frame")
    try:
        raw = lz4.frame.decompress(data)
    except RuntimeError as e:
        raise ConversionError(f"{path}: cannot decompress: {e}") from e
    try:
        obj = _JoblibUnpickler(io.BytesIO(raw)).load()
    except (pickle.UnpicklingError, EOFError, KeyError, ValueError) as e:
        raise ConversionError(f"{path}: not a joblib array list: {e}") from e
    if not isinstance(obj, list) or not all(isinstance(a, np.ndarray) for a in obj):
        raise ConversionError(f"{path}: expected a list of arrays")
    return obj


# ---------------------------------------------------------------------------------------------------
# The graphs


def fingerprint(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype="<f4").tobytes())
    return h.hexdigest()


class _Graph:
    def __init__(self, name: str):
        self.name = name
        self.nodes: list = []
        self.inits: list = []
        self.n = 0

    def const(self, arr: np.ndarray, base: str) -> str:
        self.n += 1
        name = f"{base}_{self.n}"
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), name))
        return name

    def op(self, op_type: str, inputs: list[str], base: str, out: str | None = None, **attrs) -> str:
        self.n += 1
        out = out or f"{base}_{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{base}_{self.n}", **attrs))
        return out


class _Layers:
    """Layer parameters in one form (OIHW conv, [out, in] dense, per-channel PReLU), whatever the source."""

    def __init__(self, flavor: str, net: str, arrays):
        self.flavor, self.net = flavor, net
        self.arrays = arrays
        self.pos = 0
        self.used: set[str] = set()

    def _next(self, key: str, ndim: int) -> np.ndarray:
        if self.flavor == "mtcnn":
            if self.pos >= len(self.arrays):
                raise ConversionError(f"{self.net}: fewer arrays than the architecture needs")
            a = self.arrays[self.pos]
            self.pos += 1
        else:
            if key not in self.arrays:
                raise ConversionError(f"{self.net}: missing weight {key}")
            a = self.arrays[key]
            self.used.add(key)
        if a.ndim != ndim:
            raise ConversionError(f"{self.net}: {key} has shape {a.shape}, expected {ndim} dimensions")
        return np.asarray(a, dtype=np.float32)

    def conv(self, name: str):
        w = self._next(f"{name}.weight", 4)
        b = self._next(f"{name}.bias", 1)
        if self.flavor == "mtcnn":
            w = w.transpose(3, 2, 0, 1)  # HWIO -> OIHW
        return w, b

    def prelu(self, name: str, spatial: bool):
        a = self._next(f"{name}.weight", 3 if self.flavor == "mtcnn" and spatial else 1).reshape(-1)
        return a.reshape(-1, 1, 1) if spatial else a

    def dense(self, name: str):
        w = self._next(f"{name}.weight", 2)
        b = self._next(f"{name}.bias", 1)
        if self.flavor == "mtcnn":
            w = w.T  # [in, out] -> [out, in]
        return w, b

    def finish(self):
        if self.flavor == "mtcnn":
            if self.pos != len(self.arrays):
                raise ConversionError(f"{self.net}: {len(self.arrays) - self.pos} arrays not used (wrong architecture?)")
        else:
            unused = sorted(set(self.arrays) - self.used)
            if unused:
                raise ConversionError(f"{self.net}: weights not used by the graph: {unused[:5]}")


def _pool(g: _Graph, x: str, flavor: str, k: int, s: int, keras_padding: str) -> str:
    if flavor == "mtcnn":
        # Keras/TF 'same' pads at the end first (SAME_UPPER); padded cells never win the max.
        pad = "SAME_UPPER" if keras_padding == "same" else "VALID"
        return g.op("MaxPool", [x], "pool", kernel_shape=[k, k], strides=[s, s], auto_pad=pad)
    return g.op("MaxPool", [x], "pool", kernel_shape=[k, k], strides=[s, s], ceil_mode=1)


def _conv_prelu(g: _Graph, L: _Layers, x: str, conv: str, prelu: str) -> str:
    w, b = L.conv(conv)
    y = g.op("Conv", [x, g.const(w, "w"), g.const(b, "b")], "conv", kernel_shape=list(w.shape[2:]))
    return g.op("PRelu", [y, g.const(L.prelu(prelu, True), "alpha")], "prelu")


def _dense(g: _Graph, L: _Layers, x: str, name: str, out: str | None = None) -> str:
    w, b = L.dense(name)
    return g.op("Gemm", [x, g.const(w, "w"), g.const(b, "b")], "dense", out=out, transB=1)


def _flatten_whc(g: _Graph, x: str) -> str:
    return g.op("Flatten", [g.op("Transpose", [x], "perm", perm=[0, 3, 2, 1])], "flatten", axis=1)


def build(flavor: str, net: str, arrays) -> onnx.ModelProto:
    g = _Graph(f"{flavor}_{net}")
    L = _Layers(flavor, net, arrays)
    k = flavor == "mtcnn"
    x = "input"
    if net == "pnet":
        y = _conv_prelu(g, L, x, "conv1", "prelu1")
        y = _pool(g, y, flavor, 2, 2, "same")
        y = _conv_prelu(g, L, y, "conv2", "prelu2")
        y = _conv_prelu(g, L, y, "conv3", "prelu3")
        # Keras: conv4-1 is the box regression, conv4-2 the classifier; PyTorch names them the other way.
        heads = [("conv4_1", "reg"), ("conv4_2", "prob")] if k else [("conv4_2", "reg"), ("conv4_1", "prob")]
        order = heads if k else heads[::-1]
        outs = {}
        for name, role in order:
            w, b = L.conv(name)
            z = g.op("Conv", [y, g.const(w, "w"), g.const(b, "b")], "conv", out=None if role == "prob" else "reg", kernel_shape=[1, 1])
            outs[role] = z
        g.op("Softmax", [outs["prob"]], "softmax", out="prob", axis=1)
        outputs = [("reg", [None, 4, "h", "w"]), ("prob", [None, 2, "h", "w"])]
        size = [None, 3, "height", "width"]
    elif net == "rnet":
        y = _conv_prelu(g, L, x, "conv1", "prelu1")
        y = _pool(g, y, flavor, 3, 2, "same")
        y = _conv_prelu(g, L, y, "conv2", "prelu2")
        y = _pool(g, y, flavor, 3, 2, "valid")
        y = _conv_prelu(g, L, y, "conv3", "prelu3")
        y = _flatten_whc(g, y)
        y = _dense(g, L, y, "fc4" if k else "dense4")
        y = g.op("PRelu", [y, g.const(L.prelu("prelu4", False), "alpha")], "prelu")
        if k:
            _dense(g, L, y, "fc5_1", out="reg")
            g.op("Softmax", [_dense(g, L, y, "fc5_2")], "softmax", out="prob", axis=1)
        else:
            g.op("Softmax", [_dense(g, L, y, "dense5_1")], "softmax", out="prob", axis=1)
            _dense(g, L, y, "dense5_2", out="reg")
        outputs = [("reg", [None, 4]), ("prob", [None, 2])]
        size = [None, 3, 24, 24]
    elif net == "onet":
        y = _conv_prelu(g, L, x, "conv1", "prelu1")
        y = _pool(g, y, flavor, 3, 2, "same")
        y = _conv_prelu(g, L, y, "conv2", "prelu2")
        y = _pool(g, y, flavor, 3, 2, "valid")
        y = _conv_prelu(g, L, y, "conv3", "prelu3")
        y = _pool(g, y, flavor, 2, 2, "same")
        y = _conv_prelu(g, L, y, "conv4", "prelu4")
        y = _flatten_whc(g, y)
        y = _dense(g, L, y, "fc5" if k else "dense5")
        y = g.op("PRelu", [y, g.const(L.prelu("prelu5", False), "alpha")], "prelu")
        if k:
            _dense(g, L, y, "fc6_1", out="reg")
            _dense(g, L, y, "fc6_2", out="landmarks")
            g.op("Softmax", [_dense(g, L, y, "fc6_3")], "softmax", out="prob", axis=1)
        else:
            g.op("Softmax", [_dense(g, L, y, "dense6_1")], "softmax", out="prob", axis=1)
            _dense(g, L, y, "dense6_2", out="reg")
            _dense(g, L, y, "dense6_3", out="landmarks")
        outputs = [("reg", [None, 4]), ("landmarks", [None, 10]), ("prob", [None, 2])]
        size = [None, 3, 48, 48]
    else:
        raise ConversionError(f"unknown network {net}")
    L.finish()
    dims = lambda d: ["batch" if v is None else v for v in d]  # noqa: E731
    graph = helper.make_graph(
        g.nodes,
        g.name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, dims(size))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims(d)) for n, d in outputs],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="facecompute")
    model.ir_version = 8
    model.doc_string = f"MTCNN {net} ({flavor} weights); input NCHW RGB, normalised by the caller"
    onnx.checker.check_model(model)
    return model


def load(flavor: str, path: str):
    if flavor == "mtcnn":
        arrays = load_joblib_lz4(path)
        return arrays, fingerprint(arrays)
    try:
        sd = load_legacy_state_dict(path)
    except (ValueError, pickle.UnpicklingError, EOFError) as e:
        raise ConversionError(f"{path}: {e}") from e
    return sd, fingerprint(list(sd.values()))


def convert(flavor: str, paths: list[str], out_dir: str, expect: list[str] | None) -> None:
    loaded = []
    for net, path in zip(NETS, paths):
        arrays, fp = load(flavor, path)
        if expect is not None and fp != expect[len(loaded)].lower():
            raise FingerprintMismatch(
                f"{net}: content fingerprint mismatch: expected {expect[len(loaded)].lower()}, the file gives {fp}; "
                "these are not the weights the manifest names"
            )
        loaded.append((net, arrays))
    parent = os.path.dirname(os.path.abspath(out_dir))
    tmp = tempfile.mkdtemp(prefix=".mtcnn-", dir=parent)
    os.chmod(tmp, 0o755)
    try:
        for net, arrays in loaded:
            onnx.save(build(flavor, net, arrays), os.path.join(tmp, f"{net}.onnx"))
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavor", required=True, choices=["mtcnn", "facenet-pytorch"])
    ap.add_argument("--expect-fingerprint", action="append", metavar="HEX", help="given 3 times: PNet, RNet, ONet")
    ap.add_argument("--print-fingerprint", action="store_true")
    ap.add_argument("files", nargs="+", help="PNET RNET ONET [OUT_DIR]")
    args = ap.parse_args(argv)
    want = 3 if args.print_fingerprint else 4
    if len(args.files) != want:
        ap.error(f"expected {want} paths")
    if args.expect_fingerprint is not None and len(args.expect_fingerprint) != 3:
        ap.error("--expect-fingerprint must be given once per network (3 times)")
    try:
        if args.print_fingerprint:
            for net, path in zip(NETS, args.files):
                print(net, load(args.flavor, path)[1])
            return 0
        convert(args.flavor, args.files[:3], args.files[3], args.expect_fingerprint)
    except FingerprintMismatch as e:
        print(f"mtcnn_to_onnx: {e}", file=sys.stderr)
        return FINGERPRINT_EXIT
    except (ConversionError, OSError) as e:
        print(f"mtcnn_to_onnx: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Convert dlib's ``dlib_face_recognition_resnet_model_v1.dat`` into an ONNX graph.

Usage: python models/converters/dlib_to_onnx.py INPUT.dat OUTPUT.onnx

Only numpy and onnx are needed (no dlib). A malformed or unexpected file exits with status 2 and a
one-line message on stderr; OUTPUT is written atomically (temporary file + rename), so a failed run
never leaves a partial model behind.

ONNX layout produced
--------------------
  input      float32 [N, 3, 150, 150], NCHW, channels R, G, B, raw pixel values 0..255 (DeepFace hands
             dlib uint8 pixels, truncated, so callers feed integral values)
  embedding  float32 [N, 128], dlib's descriptor exactly as compute_face_descriptor returns it (no L2
             normalisation: dlib's metric loss trains raw Euclidean distances)
  opset 17, IR version 8; N is dynamic.

  (x - mean_rgb) / 256                         dlib's input_rgb_image_sized<150>; means read from the file
  Conv7x7/2 (+affine folded) -> Relu -> MaxPool3x3/2
  14 residual blocks: 28 3x3 convolutions (each conv's affine folded in), Relu, zero-padded Add;
  the 4 down-sampling blocks add a 2x2/2 AveragePool of their input instead of the input itself
  GlobalAveragePool -> Flatten -> MatMul (fc_no_bias 256->128)

dlib's serialization, as found in this file (facts about the format; the parser is our own)
--------------------------------------------------------------------------------------------
Integers are variable length: one control byte (low nibble = number of value bytes, bit 7 = negative),
then the magnitude little-endian. Strings: integer length, then bytes. bool: one ASCII byte '0'/'1'.
float/double: integer mantissa then integer exponent (value = m * 2**e). A tensor: version 2, then
n, k, nr, nc, then n*k*nr*nc little-endian float32. An alias_tensor (a view into a layer's params):
version 1, n, k, nr, nc; its offset is implied by the layer (filters first, then biases).

The network nests as C++ templates, each wrapper serializing ``version, subnetwork, details, ...``,
so the file holds the outermost-to-innermost chain of wrapper versions first (2 = add_layer,
1 = tag or skip, 3 = add_layer directly over the input layer), then the input layer, then each
computational layer's details innermost-first, each followed by 3 bools and 3 (empty) tensors
(the layer over the input also by its sample expansion factor).
Tags and skips carry no data, so which is which comes from the architecture below, which the parsed
sequence must match exactly.

dlib semantics that the graph reproduces:
  * con_: cross-correlation like ONNX Conv; filters (O, I, kh, kw); padding stored in the file
    (dlib's default is 0 for strided convolutions, kernel/2 otherwise).
  * affine_ (batch norm frozen for inference), per channel: y = gamma * x + beta. Every affine here
    directly follows a convolution whose output feeds nothing else, so it folds exactly (up to float
    rounding) into that convolution's weights and bias.
  * add_prev_: output takes the larger of each dimension of its two inputs; elements outside either
    input count as zero. In the down-sampling blocks the 2x2/2 average pool of the block input has
    fewer channels (and at 8x8 -> 4x4 vs 3x3 one extra row and column) than the block branch, so
    the smaller operand is zero-padded at the end of each axis before Add.
  * avg_pool_ with nr = nc = 0 averages over the whole plane (GlobalAveragePool).
  * fc_ (FC_NO_BIAS): params (num_inputs, num_outputs); y = flatten(x) @ W.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


class DlibFormatError(Exception):
    """The file is not the dlib face recognition network this converter knows."""


# ---------------------------------------------------------------------------------------------
# Primitive readers


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _need(self, n: int, what: str) -> None:
        if self.pos + n > len(self.data):
            raise DlibFormatError(
                f"truncated file: needed {n} byte(s) for {what} at offset {self.pos}, "
                f"file has {len(self.data)} bytes"
            )

    def int(self, what: str = "integer") -> int:
        self._need(1, what)
        ctrl = self.data[self.pos]
        size = ctrl & 0x0F
        if size > 8 or (ctrl & 0x70) != 0:
            raise DlibFormatError(f"bad integer control byte 0x{ctrl:02x} for {what} at offset {self.pos}")
        self.pos += 1
        self._need(size, what)
        value = int.from_bytes(self.data[self.pos : self.pos + size], "little")
        self.pos += size
        return -value if ctrl & 0x80 else value

    def string(self, what: str = "string", max_len: int = 256) -> str:
        n = self.int(f"length of {what}")
        if n < 0 or n > max_len:
            raise DlibFormatError(f"implausible length {n} for {what} at offset {self.pos}")
        self._need(n, what)
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError as exc:
            raise DlibFormatError(f"non-ASCII {what} at offset {self.pos - n}") from exc

    def bool(self, what: str = "bool") -> bool:
        self._need(1, what)
        b = self.data[self.pos]
        if b not in (0x30, 0x31):
            raise DlibFormatError(f"bad bool byte 0x{b:02x} for {what} at offset {self.pos}")
        self.pos += 1
        return b == 0x31

    def real(self, what: str = "float") -> float:
        mantissa = self.int(f"mantissa of {what}")
        exponent = self.int(f"exponent of {what}")
        # dlib marks non-finite values with reserved exponents.
        if exponent == 32000:
            return float("inf")
        if exponent == 32001:
            return float("-inf")
        if exponent == 32002:
            return float("nan")
        return float(mantissa) * 2.0**exponent

    def tensor(self, what: str) -> np.ndarray:
        version = self.int(f"version of tensor {what}")
        if version != 2:
            raise DlibFormatError(f"unsupported tensor serialization version {version} for {what}")
        shape = tuple(self.int(f"shape of tensor {what}") for _ in range(4))
        if any(d < 0 for d in shape):
            raise DlibFormatError(f"negative dimension in tensor {what}: {shape}")
        count = shape[0] * shape[1] * shape[2] * shape[3]
        self._need(4 * count, f"data of tensor {what} {shape}")
        arr = np.frombuffer(self.data, dtype="<f4", count=count, offset=self.pos).astype(np.float32)
        self.pos += 4 * count
        return arr.reshape(shape)

    def alias(self, what: str) -> tuple[int, int, int, int]:
        version = self.int(f"version of alias_tensor {what}")
        if version != 1:
            raise DlibFormatError(f"unsupported alias_tensor version {version} for {what}")
        return tuple(self.int(f"shape of alias_tensor {what}") for _ in range(4))  # type: ignore[return-value]


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# ---------------------------------------------------------------------------------------------
# Layer details


@dataclass
class Layer:
    kind: str  # con, affine, relu, max_pool, avg_pool, add_prev, fc
    attrs: dict[str, Any] = field(default_factory=dict)


def read_layer(r: Reader, index: int) -> Layer:
    start = r.pos
    name = r.string(f"layer {index} name")
    where = f"layer {index} ({name}) at offset {start}"
    if name == "con_4":
        params = r.tensor(f"{where} params").reshape(-1)
        num_filters = r.int()
        nr, nc = r.int(), r.int()
        stride_y, stride_x = r.int(), r.int()
        pad_y, pad_x = r.int(), r.int()
        fshape = r.alias(f"{where} filters")
        bshape = r.alias(f"{where} biases")
        for _ in range(4):  # learning-rate and weight-decay multipliers: training only
            r.real(f"{where} multiplier")
        if fshape[0] != num_filters or fshape[2:] != (nr, nc):
            raise DlibFormatError(f"{where}: filter shape {fshape} disagrees with {num_filters}x{nr}x{nc}")
        if _size(fshape) + _size(bshape) != params.size or _size(bshape) != num_filters:
            raise DlibFormatError(f"{where}: params size {params.size} does not hold filters {fshape} + biases {bshape}")
        weight = params[: _size(fshape)].reshape(fshape)
        bias = params[_size(fshape) :].copy()
        return Layer("con", dict(weight=weight, bias=bias, stride=(stride_y, stride_x), pad=(pad_y, pad_x)))
    if name == "affine_":
        params = r.tensor(f"{where} params").reshape(-1)
        gshape = r.alias(f"{where} gamma")
        bshape = r.alias(f"{where} beta")
        mode = r.int(f"{where} mode")
        if mode != 0:
            raise DlibFormatError(f"{where}: only per-channel (CONV_MODE) affine is supported, got mode {mode}")
        if gshape != bshape or _size(gshape) * 2 != params.size:
            raise DlibFormatError(f"{where}: gamma {gshape} / beta {bshape} do not match params size {params.size}")
        k = _size(gshape)
        return Layer("affine", dict(gamma=params[:k].copy(), beta=params[k:].copy()))
    if name == "relu_":
        return Layer("relu")
    if name in ("max_pool_2", "avg_pool_2"):
        nr, nc = r.int(), r.int()
        stride_y, stride_x = r.int(), r.int()
        pad_y, pad_x = r.int(), r.int()
        return Layer(name[:-2], dict(kernel=(nr, nc), stride=(stride_y, stride_x), pad=(pad_y, pad_x)))
    if name == "add_prev_":
        return Layer("add_prev")
    if name == "fc_2":
        num_outputs = r.int()
        num_inputs = r.int()
        params = r.tensor(f"{where} params")
        wshape = r.alias(f"{where} weights")
        bshape = r.alias(f"{where} biases")
        bias_mode = r.int(f"{where} bias mode")
        for _ in range(4):
            r.real(f"{where} multiplier")
        if bias_mode != 1 or _size(bshape) != 0:
            raise DlibFormatError(f"{where}: expected fc_no_bias (bias mode 1), got mode {bias_mode}")
        if wshape[:2] != (num_inputs, num_outputs) or _size(wshape) != params.size:
            raise DlibFormatError(f"{where}: weights {wshape} disagree with {num_inputs}->{num_outputs}")
        return Layer("fc", dict(weight=params.reshape(num_inputs, num_outputs).copy()))
    raise DlibFormatError(f"{where}: unsupported layer type {name!r}")


def read_layer_trailer(r: Reader, index: int, over_input: bool) -> None:
    # this_layer_setup_called, gradient_input_is_stale, get_output_and_gradient_input_disabled, then
    # x_grad, cached_output and params_grad (or grad_final): training state, ignored. The layer over
    # the input (wrapper version 3) also stores its sample expansion factor, 1 for this input layer.
    for _ in range(3):
        r.bool(f"layer {index} flag")
    for i in range(3):
        r.tensor(f"layer {index} state {i}")
    if over_input:
        factor = r.int(f"layer {index} sample expansion factor")
        if factor != 1:
            raise DlibFormatError(f"unexpected sample expansion factor {factor}")


# ---------------------------------------------------------------------------------------------
# The architecture (dlib's dnn_face_recognition_ex.cpp `anet_type`), innermost first.
# Entries: ("layer", kind, extra) for computational layers, ("tag", id), ("skip", id).


def _block(n: int, stride: int) -> list[tuple]:
    return [
        ("layer", "con", dict(filters=n, kernel=(3, 3), stride=(stride, stride))),
        ("layer", "affine", {}),
        ("layer", "relu", {}),
        ("layer", "con", dict(filters=n, kernel=(3, 3), stride=(1, 1))),
        ("layer", "affine", {}),
    ]


def _ares(n: int) -> list[tuple]:
    return [("tag", 1), *_block(n, 1), ("layer", "add_prev", dict(tag=1)), ("layer", "relu", {})]


def _ares_down(n: int) -> list[tuple]:
    return [
        ("tag", 1),
        *_block(n, 2),
        ("tag", 2),
        ("skip", 1),
        ("layer", "avg_pool", dict(kernel=(2, 2), stride=(2, 2))),
        ("layer", "add_prev", dict(tag=2)),
        ("layer", "relu", {}),
    ]


def expected_architecture() -> list[tuple]:
    seq: list[tuple] = [
        ("layer", "con", dict(filters=32, kernel=(7, 7), stride=(2, 2))),
        ("layer", "affine", {}),
        ("layer", "relu", {}),
        ("layer", "max_pool", dict(kernel=(3, 3), stride=(2, 2))),
    ]
    seq += _ares(32) * 3  # alevel4
    seq += _ares_down(64) + _ares(64) * 3  # alevel3
    seq += _ares_down(128) + _ares(128) * 2  # alevel2
    seq += _ares_down(256) + _ares(256) * 2  # alevel1
    seq += _ares_down(256)  # alevel0
    seq += [("layer", "avg_pool", dict(kernel=(0, 0), stride=(1, 1))), ("layer", "fc", dict(outputs=128))]
    return seq


# ---------------------------------------------------------------------------------------------
# Whole file


@dataclass
class DlibNet:
    means: tuple[float, float, float]
    size: tuple[int, int]
    ops: list[tuple]  # architecture entries, with parsed Layer objects for computational ones


def parse(data: bytes) -> DlibNet:
    r = Reader(data)
    if r.int("add_loss_layer version") != 1:
        raise DlibFormatError("not a dlib network file (bad add_loss_layer version)")
    loss = r.string("loss layer name")
    if loss != "loss_metric_2":
        raise DlibFormatError(f"expected loss_metric_2, found loss layer {loss!r}")
    r.real("loss margin")
    r.real("loss distance threshold")

    # Outermost-to-innermost chain of wrapper versions.
    chain: list[int] = []
    while True:
        v = r.int("wrapper version")
        if v not in (1, 2, 3):
            raise DlibFormatError(f"unexpected wrapper version {v} at offset {r.pos}")
        chain.append(v)
        if v == 3:
            break
        if len(chain) > 10000:
            raise DlibFormatError("network nesting too deep")

    arch = expected_architecture()
    got = ["layer" if v != 1 else "tag/skip" for v in reversed(chain)]
    want = ["layer" if e[0] == "layer" else "tag/skip" for e in arch]
    if got != want:
        raise DlibFormatError(
            f"network structure differs from dlib_face_recognition_resnet_model_v1 "
            f"({len(got)} wrappers found, {len(want)} expected)"
        )

    name = r.string("input layer name")
    if name != "input_rgb_image_sized":
        raise DlibFormatError(f"expected input_rgb_image_sized, found {name!r}")
    means = (r.real("avg_red"), r.real("avg_green"), r.real("avg_blue"))
    size = (r.int("input rows"), r.int("input columns"))
    if size != (150, 150):
        raise DlibFormatError(f"expected a 150x150 input, found {size}")

    ops: list[tuple] = []
    index = 0
    for entry in arch:
        if entry[0] != "layer":
            ops.append(entry)
            continue
        _, kind, extra = entry
        layer = read_layer(r, index)
        read_layer_trailer(r, index, over_input=index == 0)
        if layer.kind != kind:
            raise DlibFormatError(f"layer {index}: expected {kind}, found {layer.kind}")
        _check_layer(layer, extra, index)
        ops.append(("layer", layer, extra))
        index += 1
    if r.pos != len(data):
        raise DlibFormatError(f"{len(data) - r.pos} unexpected trailing byte(s) after the network")
    return DlibNet(means=means, size=size, ops=ops)


def _check_layer(layer: Layer, extra: dict, index: int) -> None:
    a = layer.attrs
    if layer.kind == "con":
        w = a["weight"]
        if w.shape[0] != extra["filters"] or tuple(w.shape[2:]) != extra["kernel"] or a["stride"] != extra["stride"]:
            raise DlibFormatError(f"layer {index}: convolution {w.shape} stride {a['stride']} is not the expected one")
    elif layer.kind in ("max_pool", "avg_pool"):
        if a["kernel"] != extra["kernel"] or (a["kernel"] != (0, 0) and a["stride"] != extra["stride"]):
            raise DlibFormatError(f"layer {index}: pooling {a} is not the expected one")
    elif layer.kind == "fc":
        if a["weight"].shape[1] != extra["outputs"]:
            raise DlibFormatError(f"layer {index}: fc has {a['weight'].shape[1]} outputs")


# ---------------------------------------------------------------------------------------------
# ONNX graph


class GraphBuilder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, prefix: str, value: np.ndarray) -> str:
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(value, n))
        return n

    def node(self, op: str, inputs: list[str], prefix: str, **attrs: Any) -> str:
        out = self.name(prefix)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out


def _zero_pad_to(g: GraphBuilder, x: str, shape: tuple[int, int, int], target: tuple[int, int, int]) -> str:
    if shape == target:
        return x
    extra = [t - s for s, t in zip(shape, target)]
    pads = np.array([0, 0, 0, 0, 0, *extra], dtype=np.int64)
    return g.node("Pad", [x, g.const("pads", pads)], "zpad", mode="constant")


def build_onnx(net: DlibNet) -> onnx.ModelProto:
    g = GraphBuilder()
    mean = np.array(net.means, dtype=np.float32).reshape(1, 3, 1, 1)
    x = g.node("Sub", ["input", g.const("rgb_mean", mean)], "centred")
    x = g.node("Mul", [x, g.const("inv256", np.array(1.0 / 256.0, dtype=np.float32))], "scaled")
    shape = (3, net.size[0], net.size[1])  # (C, H, W): batch stays dynamic

    tags: dict[int, tuple[str, tuple[int, int, int]]] = {}
    ops = net.ops
    i = 0
    while i < len(ops):
        entry = ops[i]
        if entry[0] == "tag":
            tags[entry[1]] = (x, shape)
            i += 1
            continue
        if entry[0] == "skip":
            x, shape = tags[entry[1]]
            i += 1
            continue
        layer: Layer = entry[1]
        a = layer.attrs
        if layer.kind == "con":
            w = a["weight"].astype(np.float64)
            b = a["bias"].astype(np.float64)
            nxt = ops[i + 1] if i + 1 < len(ops) else None
            if nxt is not None and nxt[0] == "layer" and nxt[1].kind == "affine":
                # Fold y = gamma*(W*x + b) + beta into the convolution (in float64, then rounded once).
                gamma = nxt[1].attrs["gamma"].astype(np.float64)
                beta = nxt[1].attrs["beta"].astype(np.float64)
                w = w * gamma.reshape(-1, 1, 1, 1)
                b = b * gamma + beta
                i += 1
            kh, kw = w.shape[2:]
            (sy, sx), (py, px) = a["stride"], a["pad"]
            x = g.node(
                "Conv",
                [x, g.const("conv_w", w.astype(np.float32)), g.const("conv_b", b.astype(np.float32))],
                "conv",
                kernel_shape=[kh, kw],
                strides=[sy, sx],
                pads=[py, px, py, px],
            )
            shape = (w.shape[0], (shape[1] + 2 * py - kh) // sy + 1, (shape[2] + 2 * px - kw) // sx + 1)
        elif layer.kind == "affine":
            # Only reached when no convolution precedes it (not the case in this network).
            gamma = a["gamma"].reshape(1, -1, 1, 1)
            beta = a["beta"].reshape(1, -1, 1, 1)
            x = g.node("Mul", [x, g.const("gamma", gamma)], "affine_mul")
            x = g.node("Add", [x, g.const("beta", beta)], "affine_add")
        elif layer.kind == "relu":
            x = g.node("Relu", [x], "relu")
        elif layer.kind in ("max_pool", "avg_pool"):
            (kh, kw), (sy, sx), (py, px) = a["kernel"], a["stride"], a["pad"]
            if layer.kind == "avg_pool" and (kh, kw) == (0, 0):
                x = g.node("GlobalAveragePool", [x], "gap")
                shape = (shape[0], 1, 1)
            else:
                if py or px:
                    # dlib and ONNX disagree on what padding contributes to pools; not needed here.
                    raise DlibFormatError("padded pooling is not supported")
                op = "MaxPool" if layer.kind == "max_pool" else "AveragePool"
                x = g.node(op, [x], layer.kind, kernel_shape=[kh, kw], strides=[sy, sx])
                shape = (shape[0], (shape[1] - kh) // sy + 1, (shape[2] - kw) // sx + 1)
        elif layer.kind == "add_prev":
            other, oshape = tags[entry[2]["tag"]]
            target = tuple(max(p, q) for p, q in zip(shape, oshape))
            x = g.node(
                "Add",
                [_zero_pad_to(g, x, shape, target), _zero_pad_to(g, other, oshape, target)],  # type: ignore[arg-type]
                "add",
            )
            shape = target  # type: ignore[assignment]
        elif layer.kind == "fc":
            w = a["weight"]
            if w.shape[0] != shape[0] * shape[1] * shape[2]:
                raise DlibFormatError(f"fc expects {w.shape[0]} inputs, network gives {shape}")
            x = g.node("Flatten", [x], "flat", axis=1)
            x = g.node("MatMul", [x, g.const("fc_w", w)], "fc")
            shape = (w.shape[1], 1, 1)
        else:  # pragma: no cover - read_layer only produces the kinds above
            raise DlibFormatError(f"unsupported layer {layer.kind}")
        i += 1

    g.nodes.append(helper.make_node("Identity", [x], ["embedding"], name="embedding"))
    graph = helper.make_graph(
        g.nodes,
        "dlib_face_recognition_resnet_model_v1",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, net.size[0], net.size[1]])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["N", shape[0]])],
        g.inits,
    )
    model = helper.make_model(
        graph,
        producer_name="facecompute dlib_to_onnx",
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    model.ir_version = IR_VERSION
    model.doc_string = "dlib_face_recognition_resnet_model_v1: input RGB 0..255 NCHW [N,3,150,150] -> embedding [N,128]"
    onnx.checker.check_model(model)
    return model


def write_atomic(model: onnx.ModelProto, path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".dlib_to_onnx.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: dlib_to_onnx.py INPUT.dat OUTPUT.onnx\n")
        return 64
    src, dst = argv[1], argv[2]
    try:
        with open(src, "rb") as f:
            data = f.read()
    except OSError as exc:
        sys.stderr.write(f"dlib_to_onnx: cannot read {src}: {exc.strerror}\n")
        return 2
    try:
        net = parse(data)
        model = build_onnx(net)
    except DlibFormatError as exc:
        sys.stderr.write(f"dlib_to_onnx: malformed dlib model file {src}: {exc}\n")
        return 2
    try:
        write_atomic(model, dst)
    except OSError as exc:
        sys.stderr.write(f"dlib_to_onnx: cannot write {dst}: {exc.strerror}\n")
        return 1
    convs = sum(1 for n in model.graph.node if n.op_type == "Conv")
    sys.stdout.write(f"dlib_to_onnx: wrote {dst} ({convs} convolutions, means {tuple(round(m, 3) for m in net.means)})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""RetinaFace ResNet-50 (the retina-face package's Keras graph, itself insightface's MXNet R50) as ONNX.

Used by keras_to_onnx.py --arch retinaface_r50; see that file's docstring for the output names.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from keras_to_onnx import Builder, Graph, KerasWeights, nhwc_input

EPS = 1.9999999494757503e-05  # MXNet's 2e-5 as a float32, as the Keras graph writes it
UNITS = (3, 4, 6, 3)


def build_retinaface_r50(w: KerasWeights):
    g = Graph()
    b = Builder(w, g)
    x, vin = nhwc_input(g, None, None)

    def conv_bn(x, cin, conv, bn, f, k, s=1, p=0, bias=False, relu=False):
        return b.conv(x, cin, conv, f, (k, k), s, pads=(p, p, p, p), bias=bias, bn=bn, bn_eps=EPS, relu=relu)

    def bn_relu(x, name, c):
        return g.op("Relu", [b.bn(x, name, c, EPS)])

    # bn_data normalises the raw input before the zero padding, so it cannot be folded into conv0.
    x = b.bn(x, "bn_data", 3, EPS)
    x = conv_bn(x, 3, "conv0", "bn0", 64, 7, 2, 3, relu=True)
    x = b.pad(x, 1, 1, 1, 1)
    # Padding with zeros before a max pool is exact here: the input is post-ReLU, so never below 0.
    x = b.maxpool(x, 3, 2)

    cin = 64
    taps = {}
    for stage, units in enumerate(UNITS, start=1):
        mid = 64 * 2 ** (stage - 1)
        out = mid * 4
        for unit in range(1, units + 1):
            p = f"stage{stage}_unit{unit}"
            stride = 2 if (unit == 1 and stage > 1) else 1
            r1 = bn_relu(x, p + "_bn1", cin)
            y = conv_bn(r1, cin, p + "_conv1", p + "_bn2", mid, 1, relu=True)
            if unit == 1:
                taps[stage] = y  # relu2 of the first unit: the lateral taps for the FPN
            y = conv_bn(y, mid, p + "_conv2", p + "_bn3", mid, 3, stride, 1, relu=True)
            y = b.conv(y, mid, p + "_conv3", out, (1, 1), bias=False)
            sc = b.conv(r1, cin, p + "_sc", out, (1, 1), stride, bias=False) if unit == 1 else x
            x = g.op("Add", [y, sc])
            cin = out
    c5 = bn_relu(x, "bn1", 2048)

    def lateral(x, cin, name):
        return conv_bn(x, cin, name, name + "_bn", 256, 1, bias=True, relu=True)

    def upsample_to(x, like):
        # UpSampling2D nearest x2, then crop to the lateral's size; the crop offset
        # ((2*ceil(h/2) - h) // 2) is always 0, so a slice from the origin is exact.
        up = g.op("Resize", [x, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        shp = g.op("Shape", [like])
        hw = g.op("Slice", [shp, g.const(np.array([2], np.int64), "s"), g.const(np.array([4], np.int64), "e")])
        return g.op("Slice", [up, g.const(np.array([0, 0], np.int64), "st"), hw, g.const(np.array([2, 3], np.int64), "ax")])

    def aggr(x, name):
        return conv_bn(x, 256, name, name + "_bn", 256, 3, 1, 1, bias=True, relu=True)

    def ssh(x, m):
        p = f"ssh_m{m}_det"
        c1 = conv_bn(x, 256, p + "_conv1", p + "_conv1_bn", 256, 3, 1, 1, bias=True)
        ctx = conv_bn(x, 256, p + "_context_conv1", p + "_context_conv1_bn", 128, 3, 1, 1, bias=True, relu=True)
        c2 = conv_bn(ctx, 128, p + "_context_conv2", p + "_context_conv2_bn", 128, 3, 1, 1, bias=True)
        c3 = conv_bn(ctx, 128, p + "_context_conv3_1", p + "_context_conv3_1_bn", 128, 3, 1, 1, bias=True, relu=True)
        c3 = conv_bn(c3, 128, p + "_context_conv3_2", p + "_context_conv3_2_bn", 128, 3, 1, 1, bias=True)
        return g.op("Relu", [g.op("Concat", [c1, c2, c3], axis=1)])

    l32 = lateral(c5, 2048, "ssh_c3_lateral")
    l16 = lateral(taps[4], 512, "ssh_c2_lateral")
    l8 = lateral(taps[3], 256, "ssh_m1_red_conv")
    p16 = aggr(g.op("Add", [l16, upsample_to(l32, l16)]), "ssh_c2_aggr")
    p8 = aggr(g.op("Add", [l8, upsample_to(p16, l8)]), "ssh_c1_aggr")
    feats = {32: ssh(l32, 3), 16: ssh(p16, 2), 8: ssh(p8, 1)}

    outputs = []
    for s in (32, 16, 8):
        f = feats[s]
        score = b.conv(f, 512, f"face_rpn_cls_score_stride{s}", 4, (1, 1), bias=True)
        # Channels are (bg a0, bg a1, fg a0, fg a1); the Keras reshape/softmax/reshape dance is a softmax
        # of channel k against k+2, which leaves the channels in that same order.
        shp = g.op("Shape", [score])
        n = g.op("Slice", [shp, g.const(np.array([0], np.int64), "s"), g.const(np.array([1], np.int64), "e")])
        hw = g.op("Slice", [shp, g.const(np.array([2], np.int64), "s"), g.const(np.array([4], np.int64), "e")])
        shape5 = g.op("Concat", [n, g.const(np.array([2, 2], np.int64), "two"), hw], axis=0)
        five = g.op("Reshape", [score, shape5])
        sm = g.op("Softmax", [five], axis=1)
        prob = g.op("Reshape", [sm, shp])
        bbox = b.conv(f, 512, f"face_rpn_bbox_pred_stride{s}", 8, (1, 1), bias=True)
        lmk = b.conv(f, 512, f"face_rpn_landmark_pred_stride{s}", 20, (1, 1), bias=True)
        for t, name, c in ((prob, f"cls_prob_s{s}", 4), (bbox, f"bbox_pred_s{s}", 8), (lmk, f"landmark_pred_s{s}", 20)):
            g.op("Transpose", [t], outputs=[name], perm=[0, 2, 3, 1])
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", f"H{s}", f"W{s}", c]))
    return g.model([vin], outputs, "retinaface_r50")

"""Reference RetinaFace MobileNet-0.25 in PyTorch, written from biubug6's models/net.py +
models/retinaface.py (phase='test'), plus a numpy detection pipeline with facecompute's semantics
(long side 320 or serengil scaling, threshold 0.9, NMS 0.4). Priors are those of
Face-Detector-1MB-with-landmark's cfg_mnet, where the weights come from.

Offline tool only (needs torch + opencv-python, installed outside the repository); CI never runs it.
Used by make_detector_fixtures.py and bench/detectors.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(inp, oup, stride=1, leaky=0.0):
    return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), nn.LeakyReLU(leaky, inplace=True))


def conv_bn_no_relu(inp, oup, stride):
    return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup))


def conv_bn1x1(inp, oup, stride, leaky=0.0):
    return nn.Sequential(nn.Conv2d(inp, oup, 1, stride, 0, bias=False), nn.BatchNorm2d(oup), nn.LeakyReLU(leaky, inplace=True))


def conv_dw(inp, oup, stride, leaky=0.1):
    return nn.Sequential(
        nn.Conv2d(inp, inp, 3, stride, 1, groups=inp, bias=False), nn.BatchNorm2d(inp), nn.LeakyReLU(leaky, inplace=True),
        nn.Conv2d(inp, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup), nn.LeakyReLU(leaky, inplace=True),
    )


class SSH(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        leaky = 0.1 if cout <= 64 else 0.0
        self.conv3X3 = conv_bn_no_relu(cin, cout // 2, 1)
        self.conv5X5_1 = conv_bn(cin, cout // 4, 1, leaky)
        self.conv5X5_2 = conv_bn_no_relu(cout // 4, cout // 4, 1)
        self.conv7X7_2 = conv_bn(cout // 4, cout // 4, 1, leaky)
        self.conv7x7_3 = conv_bn_no_relu(cout // 4, cout // 4, 1)

    def forward(self, x):
        a = self.conv3X3(x)
        b1 = self.conv5X5_1(x)
        b = self.conv5X5_2(b1)
        c = self.conv7x7_3(self.conv7X7_2(b1))
        return F.relu(torch.cat([a, b, c], 1))


class FPN(nn.Module):
    def __init__(self, cins, cout):
        super().__init__()
        leaky = 0.1 if cout <= 64 else 0.0
        self.output1 = conv_bn1x1(cins[0], cout, 1, leaky)
        self.output2 = conv_bn1x1(cins[1], cout, 1, leaky)
        self.output3 = conv_bn1x1(cins[2], cout, 1, leaky)
        self.merge1 = conv_bn(cout, cout, leaky=leaky)
        self.merge2 = conv_bn(cout, cout, leaky=leaky)

    def forward(self, xs):
        o1, o2, o3 = self.output1(xs[0]), self.output2(xs[1]), self.output3(xs[2])
        o2 = self.merge2(o2 + F.interpolate(o3, size=[o2.size(2), o2.size(3)], mode="nearest"))
        o1 = self.merge1(o1 + F.interpolate(o2, size=[o1.size(2), o1.size(3)], mode="nearest"))
        return [o1, o2, o3]


class MobileNetV1(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(conv_bn(3, 8, 2, 0.1), conv_dw(8, 16, 1), conv_dw(16, 32, 2), conv_dw(32, 32, 1), conv_dw(32, 64, 2), conv_dw(64, 64, 1))
        self.stage2 = nn.Sequential(conv_dw(64, 128, 2), *[conv_dw(128, 128, 1) for _ in range(5)])
        self.stage3 = nn.Sequential(conv_dw(128, 256, 2), conv_dw(256, 256, 1))
        self.avg = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(256, 1000)


class _Body(nn.Module):
    def __init__(self):
        super().__init__()
        m = MobileNetV1()
        self.stage1, self.stage2, self.stage3 = m.stage1, m.stage2, m.stage3

    def forward(self, x):
        a = self.stage1(x)
        b = self.stage2(a)
        return [a, b, self.stage3(b)]


class Head(nn.Module):
    def __init__(self, cin, width, anchors=2):
        super().__init__()
        self.width = width
        self.conv1x1 = nn.Conv2d(cin, anchors * width, 1, 1, 0)

    def forward(self, x):
        out = self.conv1x1(x).permute(0, 2, 3, 1).contiguous()
        return out.view(out.shape[0], -1, self.width)


class RetinaFace(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = _Body()
        self.fpn = FPN([64, 128, 256], 64)
        self.ssh1, self.ssh2, self.ssh3 = SSH(64, 64), SSH(64, 64), SSH(64, 64)
        self.ClassHead = nn.ModuleList([Head(64, 2) for _ in range(3)])
        self.BboxHead = nn.ModuleList([Head(64, 4) for _ in range(3)])
        self.LandmarkHead = nn.ModuleList([Head(64, 10) for _ in range(3)])

    def forward(self, x):
        f = self.fpn(self.body(x))
        feats = [self.ssh1(f[0]), self.ssh2(f[1]), self.ssh3(f[2])]
        loc = torch.cat([self.BboxHead[i](v) for i, v in enumerate(feats)], 1)
        conf = torch.cat([self.ClassHead[i](v) for i, v in enumerate(feats)], 1)
        landms = torch.cat([self.LandmarkHead[i](v) for i, v in enumerate(feats)], 1)
        return loc, F.softmax(conf, dim=-1), landms


def load(path: str) -> RetinaFace:
    sd = torch.load(path, map_location="cpu", weights_only=True)
    sd = {k[len("module."):] if k.startswith("module.") else k: v for k, v in sd.items()}
    sd = {k.replace("body.stage", "body.stage"): v for k, v in sd.items() if not k.startswith("body.fc")}
    net = RetinaFace()
    missing, unexpected = net.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not k.startswith("body.fc")]
    if missing or unexpected:
        raise RuntimeError(f"state dict mismatch: missing {missing[:5]} unexpected {unexpected[:5]}")
    return net.eval()


def forward(net: RetinaFace, bgr: np.ndarray):
    x = bgr.astype(np.float32) - np.array([104, 117, 123], dtype=np.float32)
    x = torch.from_numpy(x.transpose(2, 0, 1).copy()).unsqueeze(0)
    with torch.no_grad():
        loc, conf, landms = net(x)
    return loc.numpy(), conf.numpy(), landms.numpy()


def priors(h: int, w: int) -> np.ndarray:
    out = []
    for step, sizes in zip([8, 16, 32], [[10, 20], [32, 64], [128, 256]]):
        for i in range(int(np.ceil(h / step))):
            for j in range(int(np.ceil(w / step))):
                for s in sizes:
                    out.append([(j + 0.5) * step / w, (i + 0.5) * step / h, s / w, s / h])
    return np.array(out, dtype=np.float32)


def cpu_nms(dets: np.ndarray, thresh: float) -> list[int]:
    x1, y1, x2, y2, scores = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3], dets[:, 4]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(int(i))
        xx1 = np.maximum(x1[i], x1[order[1:]])
        yy1 = np.maximum(y1[i], y1[order[1:]])
        xx2 = np.minimum(x2[i], x2[order[1:]])
        yy2 = np.minimum(y2[i], y2[order[1:]])
        inter = np.maximum(0.0, xx2 - xx1 + 1) * np.maximum(0.0, yy2 - yy1 + 1)
        ovr = inter / (areas[i] + areas[order[1:]] - inter)
        order = order[np.where(ovr < thresh)[0] + 1]
    return keep


def im_scale(h: int, w: int) -> float:
    s = 1024 / float(min(h, w))
    if np.round(s * max(h, w)) > 1980:
        s = 1980 / float(max(h, w))
    return s


def detect(net: RetinaFace, bgr: np.ndarray, threshold=0.9, nms=0.4, long_side: int | None = 320):
    """facecompute's MobileNet pipeline in numpy/cv2: returns [(x1,y1,x2,y2,score,landmarks5x2)].
    long_side None selects serengil's 1024/1980 rule."""
    import cv2

    h, w = bgr.shape[:2]
    s = im_scale(h, w) if long_side is None else long_side / float(max(h, w))
    img = cv2.resize(bgr, None, None, fx=s, fy=s, interpolation=cv2.INTER_LINEAR) if s != 1.0 else bgr
    ih, iw = img.shape[:2]
    loc, conf, landms = forward(net, img)
    pr = priors(ih, iw)
    loc, conf, landms = loc[0], conf[0], landms[0]
    boxes = np.concatenate([pr[:, :2] + loc[:, :2] * 0.1 * pr[:, 2:], pr[:, 2:] * np.exp(loc[:, 2:] * 0.2)], 1)
    boxes[:, :2] -= boxes[:, 2:] / 2
    boxes[:, 2:] += boxes[:, :2]
    boxes = boxes * np.array([iw, ih, iw, ih]) / s
    lm = np.stack([pr[:, :2] + landms[:, 2 * k:2 * k + 2] * 0.1 * pr[:, 2:] for k in range(5)], 1) * np.array([iw, ih]) / s
    scores = conf[:, 1]
    idx = np.where(scores >= threshold)[0]
    dets = np.hstack([boxes[idx], scores[idx, None]]).astype(np.float32)
    keep = cpu_nms(dets, nms) if len(idx) else []
    return [(*dets[k, :4].tolist(), float(dets[k, 4]), lm[idx[k]].tolist()) for k in keep]

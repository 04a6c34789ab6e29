#!/usr/bin/env python3
"""Every intermediate of DeepFace's `mtcnn` / `fastmtcnn` detection of one image, for finding where
facecompute's detection first differs (tools/parity/mtcnn-stages.ts dumps ours in the same layout).

Offline only. mtcnn (mtcnn 1.0.0 on TensorFlow) in .venvs/deepface, fastmtcnn (facenet-pytorch 2.6.0)
in /work/venvs/fastmtcnn (see mtcnn_reference.py):

    .venvs/deepface/bin/python tools/reference/mtcnn_stages.py --detector mtcnn IMAGE OUT.npz
    /work/venvs/fastmtcnn/bin/python tools/reference/mtcnn_stages.py --detector fastmtcnn IMAGE OUT.npz

The image goes through DeepFace 0.0.100's own steps (cv2.imread, the align border, BGR to RGB), then
the library's stage code line by line (the stages' __call__ bodies, recording what each step returns).
Arrays written (NCHW where the tensor is an image, so both dumps compare element by element):
  bgr                 the bordered image DeepFace's detector is given
  level{k}            PNet input of pyramid level k, [1, 3, h, w]; scale{k} its scale
  pnet{k}_reg/_prob   PNet's outputs, [1, 4, h', w'] and [1, 2, h', w']
  pnet_boxes          the boxes RNet is given, [n, 5] (x1, y1, x2, y2, score; fastmtcnn: as `pad` gets them)
  rnet_in             RNet's input [n, 3, 24, 24]; rnet_reg, rnet_prob its outputs
  rnet_boxes          the boxes ONet is given
  onet_in             ONet's input [n, 3, 48, 48]; onet_reg, onet_landmarks, onet_prob its outputs
  faces               the library's result rows
With --onnx DIR the library's networks are replaced by our ONNX graphs (onnxruntime): the library's own
pixel and box work on our networks' outputs, so a difference left against our dump is ours.
"""
import argparse
import sys

import numpy as np


def nchw(t):
    return np.transpose(np.asarray(t), (0, 3, 1, 2)).copy()


def onnx_nets(onnx_dir, names):
    """Our ONNX graphs standing in for the library's networks (NHWC tensors in and out, as Keras's):
    the library's own post-processing on our networks' outputs."""
    import onnxruntime as ort
    import tensorflow as tf

    def wrap(net, outs):
        s = ort.InferenceSession(f"{onnx_dir}/{net}.onnx", providers=["CPUExecutionProvider"])
        names = [o.name for o in s.get_outputs()]

        def call(x):
            x = np.transpose(np.asarray(x, dtype=np.float32), (0, 3, 1, 2))
            got = dict(zip(names, s.run(None, {s.get_inputs()[0].name: x})))
            return [tf.constant(np.transpose(got[o], (0, 2, 3, 1)) if got[o].ndim == 4 else got[o]) for o in outs]
        return call
    return [wrap(n, o) for n, o in zip(names, [["reg", "prob"], ["reg", "prob"], ["reg", "landmarks", "prob"]])]


def mtcnn_stages(bgr, onnx_dir=""):
    import tensorflow as tf  # noqa: F401
    from mtcnn import MTCNN
    from mtcnn.utils.images import load_images_batch, standarize_batch, build_scale_pyramid, apply_scales, extract_patches
    from mtcnn.utils.bboxes import (generate_bounding_box, upscale_bboxes, smart_nms_from_bboxes, resize_to_square,
                                    replace_confidence, adjust_bboxes, pick_matches, fix_bboxes_offsets, limit_bboxes)
    from mtcnn.utils.landmarks import adjust_landmarks

    out = {}
    det = MTCNN()
    pnet, rnet, onet = (s._model for s in det.stages)
    if onnx_dir:
        pnet, rnet, onet = onnx_nets(onnx_dir, ["pnet", "rnet", "onet"])
    img_rgb = bgr[:, :, ::-1]
    images_raw = load_images_batch([img_rgb])
    images_normalized, images_oshapes, pad_param = standarize_batch(images_raw, justification="center", normalize=True)
    out["normalized_dtype"] = np.array(str(images_normalized.dtype))
    # StagePNet.__call__
    scales_groups = [build_scale_pyramid(shape[1], shape[0], min_face_size=20, scale_factor=0.709) for shape in images_oshapes]
    scales_result, scales_index = apply_scales(images_normalized, scales_groups)
    pnet_result = [pnet(s) for s in scales_result]
    for k, (lvl, res, s) in enumerate(zip(scales_result, pnet_result, scales_index)):
        out[f"level{k}"] = nchw(lvl)
        out[f"scale{k}"] = np.array(s)
        out[f"pnet{k}_reg"] = nchw(res[0])
        out[f"pnet{k}_prob"] = nchw(res[1])
    bboxes_proposals = [generate_bounding_box(r[0], r[1], 0.6) for r in pnet_result]
    up = [upscale_bboxes(b, np.asarray([s] * 1)) for b, s in zip(bboxes_proposals, scales_index)]
    nms1 = [smart_nms_from_bboxes(b, threshold=0.5, method="union", initial_sort=False) for b in up]
    for k, b in enumerate(nms1):
        out[f"pnet{k}_nms"] = b[:, 1:6].copy()
    b = np.concatenate(nms1, axis=0) if len(nms1) > 0 else np.empty((0, 6))
    b = smart_nms_from_bboxes(b, threshold=0.7, method="union", initial_sort=True)
    b = resize_to_square(b)
    out["pnet_boxes"] = b[:, 1:6].copy()
    # StageRNet.__call__
    patches = extract_patches(images_normalized, b, expected_size=(24, 24))
    out["rnet_in"] = nchw(patches)
    offs, scores = rnet(patches)
    out["rnet_reg"], out["rnet_prob"] = np.asarray(offs), np.asarray(scores)
    b = replace_confidence(b, scores)
    b = adjust_bboxes(b, offs)
    out["rnet_adjusted"] = b[:, 1:6].copy()
    b = pick_matches(b, score_threshold=0.7)
    b = smart_nms_from_bboxes(b, threshold=0.7, method="union", initial_sort=True)
    b = resize_to_square(b)
    out["rnet_boxes"] = b[:, 1:6].copy()
    # StageONet.__call__
    patches = extract_patches(images_normalized, b, expected_size=(48, 48))
    out["onet_in"] = nchw(patches)
    offs, lms, scores = onet(patches)
    out["onet_reg"], out["onet_landmarks"], out["onet_prob"] = np.asarray(offs), np.asarray(lms), np.asarray(scores)
    lms = adjust_landmarks(lms, b)
    b = replace_confidence(b, scores)
    b = adjust_bboxes(b, offs)
    b = np.concatenate([b, lms], axis=-1)
    b = pick_matches(b, scores_column=5, score_threshold=0.8)
    b = smart_nms_from_bboxes(b, threshold=0.7, method="min", initial_sort=True)
    b = fix_bboxes_offsets(b, pad_param)
    b = limit_bboxes(b, images_shapes=images_oshapes, limit_landmarks=False)
    out["faces"] = b[:, 1:].copy()
    # The library's own answer, to check the replay above is the library's.
    if not onnx_dir:
        out["library"] = np.array([r["box"] + [r["confidence"]] for r in det.detect_faces(img_rgb)])
    return out


def fastmtcnn_stages(bgr, onnx_dir=""):
    """facenet-pytorch's own detect_face, its three networks wrapped to record what they are given and
    return (or, with onnx_dir, to return our graphs' outputs instead)."""
    import cv2
    import torch
    from facenet_pytorch import MTCNN

    out = {}
    det = MTCNN(device=torch.device("cpu"))
    sessions = {}
    if onnx_dir:
        import onnxruntime as ort
        sessions = {n: ort.InferenceSession(f"{onnx_dir}/{n}.onnx", providers=["CPUExecutionProvider"]) for n in ["pnet", "rnet", "onet"]}
    names = {"pnet": ["reg", "prob"], "rnet": ["reg", "prob"], "onet": ["reg", "landmarks", "prob"]}

    class Recorder(torch.nn.Module):
        def __init__(self, net, name):
            super().__init__()
            self.net, self.name, self.calls = net, name, []

        def forward(self, x):
            if self.name in sessions:
                s = sessions[self.name]
                got = dict(zip([o.name for o in s.get_outputs()], s.run(None, {s.get_inputs()[0].name: x.numpy()})))
                y = tuple(torch.from_numpy(got[o]) for o in names[self.name])
            else:
                y = self.net(x)
            self.calls.append((x.numpy().copy(), [t.numpy().copy() for t in y]))
            return y

    # The boxes each crop stage is given: detect_face's `pad` truncates them to the crop's pixel edges.
    import facenet_pytorch.models.utils.detect_face as df
    padded = []
    pad = df.pad

    def recording_pad(boxes, w, h):
        padded.append(boxes.detach().cpu().numpy().astype(np.float64).copy())
        return pad(boxes, w, h)

    df.pad = recording_pad
    rec = {n: Recorder(getattr(det, n), n) for n in ["pnet", "rnet", "onet"]}
    for n, r in rec.items():
        setattr(det, n, r)
    img_rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB).astype("uint8")
    with torch.no_grad():
        boxes, probs, points = det.detect(img_rgb, landmarks=True)
    for k, (x, y) in enumerate(rec["pnet"].calls):
        out[f"level{k}"] = x
        out[f"pnet{k}_reg"], out[f"pnet{k}_prob"] = y
    df.pad = pad
    for name, given in zip(["pnet_boxes", "rnet_boxes"], padded):
        out[name] = given[:, :5]
    for net in ["rnet", "onet"]:
        calls = rec[net].calls  # fixed_batch_process: batches of 512
        if calls:
            out[f"{net}_in"] = np.concatenate([c[0] for c in calls])
            for i, o in enumerate(names[net]):
                out[f"{net}_{o}"] = np.concatenate([c[1][i] for c in calls])
    if boxes is not None:
        out["faces"] = np.concatenate([np.asarray(boxes, dtype=np.float64), np.asarray(probs, dtype=np.float64)[:, None]], axis=1)
        out["points"] = np.asarray(points, dtype=np.float64)
    else:
        out["faces"] = np.empty((0, 5))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detector", required=True, choices=["mtcnn", "fastmtcnn"])
    ap.add_argument("image")
    ap.add_argument("out")
    ap.add_argument("--onnx", default="", help="run our ONNX graphs (this folder) in place of the library's networks")
    args = ap.parse_args()
    import cv2
    img = cv2.imread(args.image)
    h, w = img.shape[:2]
    hb, wb = int(0.5 * h), int(0.5 * w)
    bgr = cv2.copyMakeBorder(img, hb, hb, wb, wb, cv2.BORDER_CONSTANT, value=[0, 0, 0])
    out = mtcnn_stages(bgr, args.onnx) if args.detector == "mtcnn" else fastmtcnn_stages(bgr, args.onnx)
    out["bgr"] = bgr
    np.savez_compressed(args.out, **out)
    print(f"wrote {args.out}: {sorted(out)[:8]}...", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerates the OpenCV parity fixtures under crates/facecompute-core/tests/fixtures/.

Offline tool (never run in CI): needs opencv-python(-headless)==4.9.0.80 (the version DeepFace's
Dockerfile pins), numpy and Pillow, e.g. in /work/venvs/image:

    python3 -m venv /work/venvs/image
    /work/venvs/image/bin/pip install opencv-python-headless==4.9.0.80 'numpy<2' pillow
    /work/venvs/image/bin/python tools/reference/opencv_pixels.py

Outputs (all small):
- decode/*.{png,jpg,...}: synthetic inputs covering the IMREAD_COLOR conversions (16-bit, palette,
  grey+alpha, low bit depth, CMYK JPEG, EXIF orientations 1-8, WebP with alpha, BMP 32-bit).
- decode.tsv: for each synthetic file and each file of ../shared/data/{deepface,robustness}, the
  width, height and sha256 of cv2.imdecode(IMREAD_COLOR) output, or "refused".
- ops/input*.png: small crops of shared images; ops/*.png: cv2 results of every pixel op on them;
  ops/*.f32: little-endian float32 tensors of DeepFace's float preprocessing.
- ops.tsv: what each op file is (op, input, parameters, output).
- extract.tsv + extract/*.png: DeepFace's extract_face steps (detection.py) run with cv2 on a
  shared image for synthetic detections.
"""
from __future__ import annotations

import hashlib
import io
import math
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
SHARED = (ROOT / ".." / "shared" / "data").resolve()
OUT = ROOT / "crates" / "facecompute-core" / "tests" / "fixtures"
assert cv2.__version__.startswith("4.9."), cv2.__version__


def digest(img: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest()


def cv_decode(data: bytes):
    if not data:
        return None
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def write_png(path: Path, img: np.ndarray) -> None:
    ok, buf = cv2.imencode(".png", img, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    assert ok
    path.write_bytes(buf.tobytes())


# ---------------------------------------------------------------------------------------------
# decode


def synthetic_decode_inputs() -> dict[str, bytes]:
    rng = np.random.default_rng(7)
    base = cv2.imread(str(SHARED / "deepface" / "img5.jpg"))  # 330x512 BGR
    small = cv2.resize(base, (45, 70), interpolation=cv2.INTER_AREA)
    rgb = small[:, :, ::-1]
    out: dict[str, bytes] = {}

    def pil_bytes(im: Image.Image, fmt: str, **kw) -> bytes:
        b = io.BytesIO()
        im.save(b, fmt, **kw)
        return b.getvalue()

    out["rgb16.png"] = cv2.imencode(".png", (small.astype(np.uint16) * 257 + rng.integers(0, 256, small.shape)).astype(np.uint16))[1].tobytes()
    out["gray16.png"] = cv2.imencode(".png", (small[:, :, 1].astype(np.uint16) * 251))[1].tobytes()
    out["palette.png"] = pil_bytes(Image.fromarray(rgb).quantize(37), "PNG")
    pal_t = Image.fromarray(rgb).quantize(16)
    out["palette_trns.png"] = pil_bytes(pal_t, "PNG", transparency=3)
    la = np.dstack([small[:, :, 0], rng.integers(0, 256, small.shape[:2]).astype(np.uint8)])
    out["gray_alpha.png"] = pil_bytes(Image.fromarray(la, "LA"), "PNG")
    out["gray2bit.png"] = pil_bytes(Image.fromarray(small[:, :, 2]).convert("L").quantize(4).convert("L"), "PNG", bits=2)
    out["gray1bit.png"] = pil_bytes(Image.fromarray(small[:, :, 2]).convert("1"), "PNG")
    rgba = np.dstack([rgb, rng.integers(0, 256, small.shape[:2]).astype(np.uint8)])
    out["rgba.png"] = pil_bytes(Image.fromarray(rgba, "RGBA"), "PNG")
    out["gray.jpg"] = pil_bytes(Image.fromarray(small[:, :, 1]), "JPEG", quality=90)
    out["cmyk.jpg"] = pil_bytes(Image.fromarray(rgb).convert("CMYK"), "JPEG", quality=90)
    out["progressive.jpg"] = pil_bytes(Image.fromarray(rgb), "JPEG", quality=85, progressive=True)
    out["s444.jpg"] = pil_bytes(Image.fromarray(rgb), "JPEG", quality=95, subsampling=0)
    out["s422.jpg"] = pil_bytes(Image.fromarray(rgb), "JPEG", quality=95, subsampling=1)
    for o in range(1, 9):
        ex = Image.Exif()
        ex[0x0112] = o
        out[f"exif{o}.jpg"] = pil_bytes(Image.fromarray(rgb), "JPEG", quality=90, exif=ex.tobytes())
    ex = Image.Exif()
    ex[0x0112] = 6
    out["exif6.png"] = pil_bytes(Image.fromarray(rgb), "PNG", exif=ex.tobytes())
    out["lossless_alpha.webp"] = pil_bytes(Image.fromarray(rgba, "RGBA"), "WEBP", lossless=True)
    out["lossy.webp"] = pil_bytes(Image.fromarray(rgb), "WEBP", quality=80)
    out["lossy_alpha.webp"] = pil_bytes(Image.fromarray(rgba, "RGBA"), "WEBP", quality=80)
    out["bgra32.bmp"] = cv2.imencode(".bmp", np.dstack([small, rgba[:, :, 3]]))[1].tobytes()
    out["rgb24.bmp"] = cv2.imencode(".bmp", small)[1].tobytes()
    out["pal8.bmp"] = pil_bytes(Image.fromarray(rgb).quantize(64), "BMP")
    return out


def decode_fixtures() -> None:
    ddir = OUT / "decode"
    ddir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, data in sorted(synthetic_decode_inputs().items()):
        (ddir / name).write_bytes(data)
        rows.append(("fixture", name, cv_decode(data)))
    for group in ("deepface", "robustness"):
        for p in sorted((SHARED / group).rglob("*")):
            if p.is_file() and p.suffix.lower() not in (".csv", ".txt", ".source", ".md") and p.name != "LICENSE.source":
                rows.append((group, str(p.relative_to(SHARED / group)), cv_decode(p.read_bytes())))
    with open(OUT / "decode.tsv", "w") as f:
        f.write("# set\tpath\twidth\theight\tsha256 of cv2.imdecode(IMREAD_COLOR) BGR, or refused\n")
        for group, name, img in rows:
            if img is None:
                f.write(f"{group}\t{name}\t0\t0\trefused\n")
            else:
                f.write(f"{group}\t{name}\t{img.shape[1]}\t{img.shape[0]}\t{digest(img)}\n")


# ---------------------------------------------------------------------------------------------
# pixel ops


def letterbox_float(face_bgr_u8: np.ndarray, th: int, tw: int) -> np.ndarray:
    """DeepFace represent(): face/255 (float64), resize_image, img_to_array (float32)."""
    img = face_bgr_u8 / 255
    factor = min(th / img.shape[0], tw / img.shape[1])
    dsize = (int(img.shape[1] * factor), int(img.shape[0] * factor))
    img = cv2.resize(img, dsize)
    d0, d1 = th - img.shape[0], tw - img.shape[1]
    img = np.pad(img, ((d0 // 2, d0 - d0 // 2), (d1 // 2, d1 - d1 // 2), (0, 0)), "constant")
    if img.shape[0:2] != (th, tw):
        img = cv2.resize(img, (tw, th))
    return np.asarray(img, dtype=np.float32)


def letterbox_u8(img: np.ndarray, th: int, tw: int) -> np.ndarray:
    factor = min(th / img.shape[0], tw / img.shape[1])
    dsize = (int(img.shape[1] * factor), int(img.shape[0] * factor))
    img = cv2.resize(img, dsize)
    d0, d1 = th - img.shape[0], tw - img.shape[1]
    return np.pad(img, ((d0 // 2, d0 - d0 // 2), (d1 // 2, d1 - d1 // 2), (0, 0)), "constant")


def normalize_input(img: np.ndarray, mode: str) -> np.ndarray:
    img = img.copy()
    if mode == "base":
        return img
    img *= 255
    if mode == "Facenet":
        img = (img - img.mean()) / img.std()
    elif mode == "Facenet2018":
        img /= 127.5
        img -= 1
    elif mode == "VGGFace":
        img[..., 0] -= 93.5940
        img[..., 1] -= 104.7624
        img[..., 2] -= 129.1863
    elif mode == "VGGFace2":
        img[..., 0] -= 91.4953
        img[..., 1] -= 103.8827
        img[..., 2] -= 131.0912
    elif mode == "ArcFace":
        img -= 127.5
        img /= 128
    return img


def ops_fixtures() -> None:
    odir = OUT / "ops"
    odir.mkdir(parents=True, exist_ok=True)
    img1 = cv2.imread(str(SHARED / "deepface" / "img1.jpg"))
    inputs = {
        # odd sizes, a face region, so every edge case of the tap tables is exercised
        "a": img1[700:763, 520:597],  # 77x63
        "b": img1[650:750, 520:620],  # 100x100, even: exact 2x paths
        "c": cv2.cvtColor(img1[650:711, 560:613], cv2.COLOR_BGR2GRAY),  # 53x61 grey
    }
    for k, v in inputs.items():
        write_png(odir / f"input_{k}.png", v)
    rows = []

    def out(name, op, inp, params, img):
        if img.dtype == np.float32:
            (odir / f"{name}.f32").write_bytes(np.ascontiguousarray(img).astype("<f4").tobytes())
            rows.append((op, inp, params, f"{name}.f32"))
        else:
            write_png(odir / f"{name}.png", img)
            rows.append((op, inp, params, f"{name}.png"))

    interps = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC, "area": cv2.INTER_AREA}
    sizes = {"a": [(160, 131), (41, 37), (97, 200), (13, 9), (300, 60)], "b": [(50, 50), (80, 80), (130, 130), (112, 112), (40, 40)], "c": [(17, 23), (101, 130)]}
    for k, ss in sizes.items():
        for w, h in ss:
            for iname, flag in interps.items():
                out(f"resize_{k}_{w}x{h}_{iname}", "resize", k, f"{w} {h} {iname}", cv2.resize(inputs[k], (w, h), interpolation=flag))
    for k in ("a", "b"):
        for tw, th in ((160, 160), (50, 50), (112, 112), (96, 96), (150, 150), (40, 80)):
            out(f"letterbox_{k}_{tw}x{th}", "letterbox", k, f"{tw} {th}", letterbox_u8(inputs[k], th, tw))
        out(f"border_{k}", "border", k, "5 9 0 13", cv2.copyMakeBorder(inputs[k], 5, 9, 0, 13, cv2.BORDER_CONSTANT, value=[0, 0, 0]))
        out(f"gray_{k}", "gray", k, "", cv2.cvtColor(inputs[k], cv2.COLOR_BGR2GRAY))
        h, w = inputs[k].shape[:2]
        for angle in (17.3, -8.5, 90.0, 0.0, -33.71, 3.0001, 180.0):
            m = cv2.getRotationMatrix2D((w // 2, h // 2), angle, 1.0)
            rot = cv2.warpAffine(inputs[k], m, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))
            out(f"rotate_{k}_{angle}", "rotate", k, f"{w // 2} {h // 2} {angle!r}", rot)
        m = cv2.getRotationMatrix2D((3.5, 70.25), 12.0, 1.0)
        out(f"rotate_{k}_offcentre", "rotate", k, "3.5 70.25 12.0", cv2.warpAffine(inputs[k], m, (w, h), flags=cv2.INTER_CUBIC, borderValue=(0, 0, 0)))
        for tw, th in ((50, 50), (33, 47)):
            x = letterbox_float(inputs[k], th, tw)
            out(f"tensor_{k}_{tw}x{th}_base", "tensor", k, f"{tw} {th} base", x)
        for mode in ("raw", "Facenet", "Facenet2018", "VGGFace", "VGGFace2", "ArcFace") if k == "a" else ():
            x = normalize_input(letterbox_float(inputs[k], 40, 40), mode)
            out(f"tensor_{k}_40x40_{mode}", "tensor", k, f"40 40 {mode}", x)
        # SFace: (img*255).astype(uint8) of the base tensor; Dlib the same after the RGB flip.
        x = letterbox_float(inputs[k], 112, 112)
        out(f"truncate_{k}_112x112", "truncate", k, "112 112", (x * 255).astype(np.uint8))
        x = letterbox_float(inputs[k], 150, 150)
        out(f"truncate_{k}_150x150", "truncate", k, "150 150", (x * 255).astype(np.uint8))
    with open(OUT / "ops.tsv", "w") as f:
        f.write("# op\tinput\tparams\toutput (cv2 4.9.0.80)\n")
        for r in rows:
            f.write("\t".join(r) + "\n")


# ---------------------------------------------------------------------------------------------
# DeepFace extract_face (detection.py), steps transcribed from docs/deepface-reference.md §5.1


def extract_sub_image(img, x, y, w, h):
    rx, ry = int(0.5 * w), int(0.5 * h)
    x1, y1, x2, y2 = x - rx, y - ry, x + w + rx, y + h + ry
    if x1 >= 0 and y1 >= 0 and x2 <= img.shape[1] and y2 <= img.shape[0]:
        return img[y1:y2, x1:x2], rx, ry
    x1, y1 = max(0, x1), max(0, y1)
    x2, y2 = min(img.shape[1], x2), min(img.shape[0], y2)
    crop = img[y1:y2, x1:x2]
    sub = np.zeros((h + 2 * ry, w + 2 * rx, img.shape[2]), dtype=img.dtype)
    sx, sy = max(0, rx - x), max(0, ry - y)
    sub[sy:sy + crop.shape[0], sx:sx + crop.shape[1]] = crop
    return sub, rx, ry


def align_eyes(img, le, re):
    if le is None or re is None or img.shape[0] == 0 or img.shape[1] == 0:
        return img, 0
    angle = float(np.degrees(np.arctan2(le[1] - re[1], le[0] - re[0])))
    h, w = img.shape[:2]
    m = cv2.getRotationMatrix2D((w // 2, h // 2), angle, 1.0)
    return cv2.warpAffine(img, m, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0)), angle


def project(area, angle, size):
    direction = 1 if angle >= 0 else -1
    angle = abs(angle) % 360
    if angle == 0:
        return area
    angle = angle * np.pi / 180
    height, width = size
    x = (area[0] + area[2]) / 2 - width / 2
    y = (area[1] + area[3]) / 2 - height / 2
    xn = x * np.cos(angle) + y * direction * np.sin(angle) + width / 2
    yn = -x * direction * np.sin(angle) + y * np.cos(angle) + height / 2
    x1 = xn - (area[2] - area[0]) / 2
    y1 = yn - (area[3] - area[1]) / 2
    x2 = xn + (area[2] - area[0]) / 2
    y2 = yn + (area[3] - area[1]) / 2
    return max(int(x1), 0), max(int(y1), 0), min(int(x2), width), min(int(y2), height)


def extract_faces_reference(img, dets, align, expand):
    H, W = img.shape[:2]
    hb, wb = int(0.5 * H), int(0.5 * W)
    work = cv2.copyMakeBorder(img, hb, hb, wb, wb, cv2.BORDER_CONSTANT, value=[0, 0, 0]) if align else img
    results = []
    for (x, y, w, h, le, re, conf) in dets:
        if expand > 0:
            ew, eh = w + int(w * expand / 100), h + int(h * expand / 100)
            x = max(0, x - int((ew - w) / 2))
            y = max(0, y - int((eh - h) / 2))
            w = min(work.shape[1] - x, ew)
            h = min(work.shape[0] - y, eh)
        face = work[int(y):int(y + h), int(x):int(x + w)]
        if align:
            sub, rx, ry = extract_sub_image(work, x, y, w, h)
            rot, angle = align_eyes(sub, le, re)
            x1, y1, x2, y2 = project((rx, ry, rx + w, ry + h), angle, (sub.shape[0], sub.shape[1]))
            face = rot[int(y1):int(y2), int(x1):int(x2)]
            x, y = x - wb, y - hb
            le = None if le is None else (le[0] - wb, le[1] - hb)
            re = None if re is None else (re[0] - wb, re[1] - hb)
        if face.shape[0] == 0 or face.shape[1] == 0:
            continue
        rx_, ry_ = max(0, int(x)), max(0, int(y))
        rw, rh = min(W - rx_ - 1, int(w)), min(H - ry_ - 1, int(h))

        def ok(p):
            if p is None:
                return None
            p = (int(p[0]), int(p[1]))
            return p if 0 <= p[0] < W and 0 <= p[1] < H else None

        results.append((face, (rx_, ry_, rw, rh, ok(le), ok(re), round(float(conf or 0), 2))))
    return results


def extract_fixtures() -> None:
    edir = OUT / "extract"
    edir.mkdir(parents=True, exist_ok=True)
    # A 300x400 window of img11 (rows 200..600, columns 150..450) keeps the fixtures small and is
    # reproducible from the shared file; boxes are in bordered coordinates (border 200 top/bottom,
    # 150 left/right) for align=True.
    img = np.ascontiguousarray(cv2.imread(str(SHARED / "deepface" / "img11.jpg"))[200:600, 150:450])
    H, W = img.shape[:2]
    hb, wb = H // 2, W // 2
    dets_b = [
        (wb + 95, hb + 85, 110, 110, (wb + 175, hb + 130), (wb + 125, hb + 137), 0.987654),
        (wb + 95, hb + 85, 110, 110, (wb + 125, hb + 131), (wb + 175, hb + 125), 0.5),
        (wb + 95, hb + 85, 111, 109, None, None, 1.23456),
        (wb - 10, hb - 15, 60, 80, (wb + 35, hb + 5), (wb + 5, hb + 20), 0.9),  # crosses the top-left edge
        (wb + 260, hb + 350, 60, 75, (wb + 300, hb + 380), (wb + 270, hb + 365), 0.995),  # bottom-right
        (wb + 50, hb + 50, 1, 1, (wb + 51, hb + 50), (wb + 50, hb + 50), 0.1),
        (wb + 40, hb + 60, 90, 70, (wb + 60, hb + 80), (wb + 110, hb + 140), 0.715),  # steep angle
    ]
    dets_plain = [(x - wb, y - hb, w, h, (le[0] - wb, le[1] - hb) if le else None, (re[0] - wb, re[1] - hb) if re else None, c) for (x, y, w, h, le, re, c) in dets_b]
    dets_plain = [d for d in dets_plain if d[0] >= 0 and d[1] >= 0]
    rows = []
    for align, expand, dets in ((True, 0, dets_b), (True, 25, dets_b), (False, 0, dets_plain), (False, 10, dets_plain)):
        res = extract_faces_reference(img, [tuple(d) for d in dets], align, expand)
        for i, (face, area) in enumerate(res):
            name = f"face_{int(align)}_{expand}_{i}.png"
            write_png(edir / name, face)
            rows.append((str(int(align)), str(expand), str(i), name, repr(area)))
    def pt(p):
        return "- -" if p is None else f"{p[0]} {p[1]}"

    with open(OUT / "extract.tsv", "w") as f:
        f.write("# deepface/img11.jpg[200:600, 150:450] (300x400). Rows:\n")
        f.write("#   det  align expand  x y w h lex ley rex rey confidence   (bordered coordinates when align)\n")
        f.write("#   face align expand index png  x y w h lex ley rex rey confidence   (as DeepFace reports)\n")
        for (align, expand, dets) in ((1, 0, dets_b), (1, 25, dets_b), (0, 0, dets_plain), (0, 10, dets_plain)):
            for (x, y, w, h, le, re, c) in dets:
                f.write(f"det\t{align}\t{expand}\t{x} {y} {w} {h} {pt(le)} {pt(re)} {c!r}\n")
        for (align, expand, i, name, area) in rows:
            x, y, w, h, le, re, c = eval(area)
            f.write(f"face\t{align}\t{expand}\t{i}\t{name}\t{x} {y} {w} {h} {pt(le)} {pt(re)} {c!r}\n")


if __name__ == "__main__":
    decode_fixtures()
    ops_fixtures()
    extract_fixtures()
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"fixtures written to {OUT} ({total / 1024:.0f} KiB)")

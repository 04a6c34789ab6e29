"""Regenerates crates/facecompute-core/tests/fixtures/resize/: cv2.resize on random images.

Offline tool (never run in CI): opencv-python-headless==4.11.0.86 and numpy, e.g.
    .venvs/deepface-tests/bin/python tools/reference/opencv_resize.py
Every input is noise from splitmix64(seed) (one byte per draw: the top 8 bits), so the fixture stores
only the seed and cv2's output; tests/resize_parity.rs draws the same bytes. cases.tsv has one case a
line: mode, source width, height, channels, seed, destination (`WxH` or `fx,fy`) and cv2's output as
hex (text, so that each case can be read and diffed). linear_f64 inputs are the 8-bit noise divided by 255 (DeepFace's float
faces) and their outputs are little-endian float64. cv2 4.9.0.80 (DeepFace's pin) gives the same
bytes as 4.11.0.86 on every mode here (2,400 random resizes compared).
"""
from __future__ import annotations

import random
from pathlib import Path

import cv2
import numpy as np

OUT = Path(__file__).resolve().parents[2] / "crates" / "facecompute-core" / "tests" / "fixtures" / "resize"
assert cv2.__version__ == "4.11.0", cv2.__version__
MASK = (1 << 64) - 1
FLAGS = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC, "area": cv2.INTER_AREA,
         "linear_exact": cv2.INTER_LINEAR_EXACT, "linear_f64": cv2.INTER_LINEAR}


def noise(seed: int, n: int) -> np.ndarray:
    out = bytearray(n)
    s = seed
    for i in range(n):
        s = (s + 0x9E3779B97F4A7C15) & MASK
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out[i] = (z ^ (z >> 31)) >> 56
    return np.frombuffer(bytes(out), np.uint8)


def cases(rng: random.Random):
    """(mode, sw, sh, cn, dst) where dst is (w, h) or a float pair of factors."""
    for mode, channels, n, top in (("linear", (1, 3), 70, 32), ("area", (1, 3), 30, 32), ("cubic", (1, 3), 16, 40),
                                   ("linear_exact", (1,), 24, 40), ("linear_f64", (3,), 10, 8)):
        def dim(lo=1, hi=40):
            return rng.randint(min(lo, top), min(hi, top))
        for i in range(n):
            cn = channels[i % len(channels)]
            sw, sh = dim(), dim()
            kind = i % 5
            if kind == 0:  # exact integer downscale (OpenCV's area shortcuts)
                f = rng.choice((2, 2, 3, 4))
                sw, sh = f * dim(1, 12), f * dim(1, 12)
                yield mode, sw, sh, cn, (sw // f, sh // f)
            elif kind == 1 and mode in ("linear", "area"):  # factor form, as retinaface calls it
                f = rng.choice((0.5, 0.25, 1 / 3, 0.37, 0.8, 1.25, 1.5, 2.0, 2.5, 1980 / 731))
                dw, dh = round(sw * f), round(sh * f)
                if 0 < dw <= 64 and 0 < dh <= 64:
                    yield mode, sw, sh, cn, (f, f)
                else:
                    yield mode, sw, sh, cn, (max(1, dw % 48), max(1, dh % 48))
            elif kind == 2:  # downscale
                yield mode, sw + 20, sh + 10, cn, (dim(1, sw + 19), dim(1, sh + 9))
            elif kind == 3:  # upscale
                yield mode, dim(1, 16), dim(1, 16), cn, (dim(16, 40), dim(12, 30))
            else:  # anything, often one axis up and one down
                yield mode, sw, sh, cn, (dim(), dim())
    # Integer factors on sizes they do not divide: area cells cut by the right and bottom edges.
    for mode, sw, sh, cn, f in (("linear", 7, 9, 3, 0.5), ("linear", 5, 5, 1, 0.5), ("area", 10, 7, 3, 0.5),
                                ("area", 7, 10, 1, 1 / 3), ("area", 9, 7, 3, 0.25), ("area", 11, 5, 1, 0.5)):
        yield mode, sw, sh, cn, (f, f)


def main() -> None:
    rng = random.Random(38)
    OUT.mkdir(parents=True, exist_ok=True)
    lines = [f"# mode\tsrc_w\tsrc_h\tchannels\tseed\tdst\texpected_hex (cv2 {cv2.__version__}, tools/reference/opencv_resize.py)"]
    for mode, sw, sh, cn, dst in cases(rng):
        seed = rng.getrandbits(64)
        img = noise(seed, sw * sh * cn).reshape((sh, sw, cn) if cn > 1 else (sh, sw))
        if mode == "linear_f64":
            img = img.astype(np.float64) / 255
        # x86 wheels hand 8-bit INTER_CUBIC and float64 INTER_LINEAR (sides >= 2) to IPP. The product
        # resizes nothing with INTER_CUBIC, so cubic cases record OpenCV's own code; float64 keeps IPP,
        # which DeepFace runs.
        cv2.ipp.setUseIPP(mode != "cubic")
        if isinstance(dst[0], float):
            out = cv2.resize(img, None, fx=dst[0], fy=dst[1], interpolation=FLAGS[mode])
            spec = f"{dst[0]!r},{dst[1]!r}"
        else:
            out = cv2.resize(img, dst, interpolation=FLAGS[mode])
            spec = f"{dst[0]}x{dst[1]}"
        data = np.ascontiguousarray(out).astype("<f8" if mode == "linear_f64" else np.uint8).tobytes()
        lines.append(f"{mode}\t{sw}\t{sh}\t{cn}\t{seed}\t{spec}\t{data.hex()}")
    (OUT / "cases.tsv").write_text("\n".join(lines) + "\n")
    print(f"{len(lines) - 1} cases")


if __name__ == "__main__":
    main()

"""JPEG files that make libjpeg(-turbo) emit each of its warnings, alone and followed by a fatal error,
and what OpenCV (cv2.imdecode, IMREAD_COLOR: DeepFace's loader) does with each. Offline tool; writes
crates/facecompute-core/tests/fixtures/jpeg-warnings/{*.jpg, expected.json}, which
crates/facecompute-core/tests/jpeg_warnings.rs checks our decoder against.

    python3 -m venv /tmp/cv && /tmp/cv/bin/pip install opencv-python-headless==4.11.0.86 numpy==2.1.3
    # jpegtran (libjpeg-turbo-progs, Debian) for the arithmetic-coded case, without installing it:
    #   apt-get download libjpeg-turbo-progs && dpkg -x libjpeg-turbo-progs_*.deb /tmp/jt
    JPEGTRAN=/tmp/jt/usr/bin/jpegtran /tmp/cv/bin/python tools/reference/jpeg_warnings.py [../shared/data]

Every file is derived from one face of ../shared/data/deepface/img1.jpg (DeepFace's own test image),
cropped and encoded here by OpenCV, then edited at the byte level. `repro-extraneous-bad-dht.jpg` is
issue 24's reproduction exactly: a 320x320 progressive JPEG of a face with 4 extraneous bytes and then a
DHT segment with table index 5 inserted before its second SOS. libjpeg warns about the extraneous bytes
(JWRN_EXTRANEOUS_DATA), then fails fatally on the table index (JERR_DHT_INDEX); TurboJPEG 3 reports
that pair as a warning, and a decoder that trusts the warning hands out rows it never wrote.

For each file, expected.json records what cv2 decoded (width, height) or that it refused (None), the
libjpeg messages it printed on stderr (the warning classes the file really triggers, checked here:
a file that does not trigger its intended message fails the script) and the sha256 of cv2's BGR pixels.
OpenCV bundles its own libjpeg-turbo (3.0.3 in 4.11.0.86; ours is 3.1.0), whose padding of damaged data
may differ, so the test pins the outcome and the size, not the pixels.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/facecompute-core/tests/fixtures/jpeg-warnings"
SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "data")
JPEGTRAN = os.environ.get("JPEGTRAN", "")

# The face of img1.jpg (cv2's Haar cascade finds it at x=345 y=211 w=h=769), with a margin.
FACE_BOX = (229, 95, 1000, 1000)


def face(side: int) -> np.ndarray:
    img = cv2.imread(str(SHARED / "deepface" / "img1.jpg"))
    x, y, w, h = FACE_BOX
    return cv2.resize(img[y : y + h, x : x + w], (side, side), interpolation=cv2.INTER_AREA)


def encode(img: np.ndarray, progressive: bool, quality: int, restart: int = 0) -> bytes:
    params = [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)]
    if restart:
        params += [cv2.IMWRITE_JPEG_RST_INTERVAL, restart]
    ok, buf = cv2.imencode(".jpg", img, params)
    assert ok
    return buf.tobytes()


def segments(b: bytes) -> list[tuple[int, int, int]]:
    """(marker, offset of its 0xFF, offset just past the segment and, for SOS, its entropy data)."""
    out, pos = [], 2
    out.append((0xD8, 0, 2))
    while pos < len(b):
        assert b[pos] == 0xFF, f"no marker at {pos}"
        m = b[pos + 1]
        if m == 0xD9:
            out.append((m, pos, pos + 2))
            break
        end = pos + 2 + int.from_bytes(b[pos + 2 : pos + 4], "big")
        if m == 0xDA:
            # Entropy-coded data runs to the next marker that is neither a stuffed 0xFF00 nor an RSTn.
            while not (b[end] == 0xFF and b[end + 1] not in (0x00, *range(0xD0, 0xD8))):
                end += 1
        out.append((m, pos, end))
        pos = end
    return out


def nth(b: bytes, marker: int, n: int) -> tuple[int, int, int]:
    return [s for s in segments(b) if s[0] == marker][n]


def dht(table_class: int, index: int) -> bytes:
    """A Huffman table segment with one 1-bit code; an index above 3 is JERR_DHT_INDEX."""
    counts = bytes([1] + [0] * 15)
    body = bytes([(table_class << 4) | index]) + counts + bytes([0])
    return b"\xff\xc4" + (2 + len(body)).to_bytes(2, "big") + body


def insert(b: bytes, at: int, extra: bytes) -> bytes:
    return b[:at] + extra + b[at:]


def overwrite(b: bytes, at: int, extra: bytes) -> bytes:
    return b[:at] + extra + b[at + len(extra) :]


def sos_field(b: bytes, n: int, field: str, value: int) -> bytes:
    """Sets Ss, Se, Ah or Al of the n-th SOS header."""
    _, start, _ = nth(b, 0xDA, n)
    ns = b[start + 4]
    at = start + 5 + 2 * ns
    ss, se, ahal = b[at], b[at + 1], b[at + 2]
    fields = {"Ss": ss, "Se": se, "Ah": ahal >> 4, "Al": ahal & 15}
    fields[field] = value
    return b[:at] + bytes([fields["Ss"], fields["Se"], (fields["Ah"] << 4) | fields["Al"]]) + b[at + 3 :]


def app14_adobe(transform: int) -> bytes:
    body = b"Adobe" + (100).to_bytes(2, "big") + b"\x00\x00\x00\x00" + bytes([transform])
    return b"\xff\xee" + (2 + len(body)).to_bytes(2, "big") + body


def bad_icc() -> bytes:
    # ICC_PROFILE chunk 0 of 0: libjpeg's jpeg_read_icc_profile calls such a marker bogus.
    body = b"ICC_PROFILE\x00" + bytes([0, 0]) + b"\x00" * 16
    return b"\xff\xe2" + (2 + len(body)).to_bytes(2, "big") + body


def arithmetic(b: bytes) -> bytes | None:
    if not JPEGTRAN:
        return None
    return subprocess.run([JPEGTRAN, "-arithmetic"], input=b, capture_output=True, check=True).stdout


def cv2_read(b: bytes, how: str) -> tuple[np.ndarray | None, list[str]]:
    """cv2.imread of the bytes as a file (`how` = "imread") or cv2.imdecode of the buffer, with
    libjpeg's stderr messages captured at the file-descriptor level. The two differ: OpenCV reads a
    file through libjpeg's stdio source, which ends a truncated stream with a fake EOI and a warning
    (JWRN_JPEG_EOF), and a buffer through its own source, which fails instead."""
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryFile() as err:
        path = Path(d) / "x.jpg"
        path.write_bytes(b)
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            img = cv2.imread(str(path), cv2.IMREAD_COLOR) if how == "imread" else cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        messages = [l.strip() for l in err.read().decode("utf8", "replace").splitlines() if l.strip()]
    return img, messages


def main() -> None:
    repro_base = encode(face(320), progressive=True, quality=75)
    base = encode(face(96), progressive=False, quality=75)
    prog = encode(face(96), progressive=True, quality=75)
    rst = encode(face(96), progressive=False, quality=75, restart=1)
    black = encode(np.zeros((96, 96, 3), np.uint8), progressive=False, quality=75)

    def mid_scan(b: bytes, n: int = 0, frac: float = 0.4) -> int:
        _, start, end = nth(b, 0xDA, n)
        header = 2 + int.from_bytes(b[start + 2 : start + 4], "big")
        at = start + header + int((end - start - header) * frac)
        # Never between 0xFF and its stuffed 0x00.
        while b[at - 1] == 0xFF:
            at += 1
        return at

    second_sos = nth(prog, 0xDA, 1)[1]
    eoi = nth(base, 0xD9, 0)[1]
    first_rst = next(i for i in range(nth(rst, 0xDA, 0)[1], len(rst) - 1) if rst[i] == 0xFF and rst[i + 1] == 0xD0)
    jfif = nth(base, 0xE0, 0)[1]
    last_sos = [x for x in segments(prog) if x[0] == 0xDA][-1]

    # (file, bytes, the libjpeg warning it must make cv2.imread print, what it is). Fatal errors are not
    # printed (OpenCV's error_exit jumps out without output_message), so only warnings can be checked.
    cases: list[tuple[str, bytes, str | None, str]] = [
        ("clean-baseline.jpg", base, None, "no warning: the reference"),
        ("clean-progressive.jpg", prog, None, "no warning: the reference"),
        ("repro-extraneous-bad-dht.jpg", insert(repro_base, nth(repro_base, 0xDA, 1)[1], b"\x00" * 4 + dht(0, 5)),
         "4 extraneous bytes before marker 0xc4", "issue 24: JWRN_EXTRANEOUS_DATA, then JERR_DHT_INDEX (fatal) before any row"),
        ("extraneous-data.jpg", insert(prog, second_sos, b"\x00" * 4), "4 extraneous bytes before marker 0xda", "JWRN_EXTRANEOUS_DATA"),
        ("bad-dht-index.jpg", insert(prog, second_sos, dht(0, 5)), None, "JERR_DHT_INDEX alone: fatal, no warning before it"),
        ("extraneous-then-bad-dht-after-scan.jpg", insert(base, eoi, b"\x00" * 4 + dht(0, 5)), None,
         "4 extraneous bytes and JERR_DHT_INDEX after the only scan of a baseline file: every row is written first"),
        ("jpeg-eof-baseline.jpg", base[: mid_scan(base)], "Premature end of JPEG file", "JWRN_JPEG_EOF: a baseline file cut mid-scan"),
        ("jpeg-eof-progressive.jpg", prog[: nth(prog, 0xDA, 3)[1]], "Premature end of JPEG file", "JWRN_JPEG_EOF: a progressive file cut after 3 scans"),
        ("hit-marker.jpg", insert(base, mid_scan(base), b"\xff\xd9"), "premature end of data segment", "JWRN_HIT_MARKER"),
        ("hit-marker-then-bad-dht.jpg", insert(base, mid_scan(base), b"\x00" * 4 + dht(0, 5)), "premature end of data segment",
         "JWRN_HIT_MARKER at a fatal DHT inside the scan data"),
        ("must-resync.jpg", overwrite(rst, first_rst, b"\xff\xd3"), "found marker 0xd3 instead of RST0", "JWRN_MUST_RESYNC"),
        ("huff-bad-code.jpg", overwrite(base, mid_scan(base), b"\xff\x00" * 24), "bad Huffman code", "JWRN_HUFF_BAD_CODE"),
        ("bogus-progression.jpg", sos_field(prog, 1, "Ah", 1), None, "an AC refinement scan before its first scan: JERR_BAD_PROGRESSION (fatal)"),
        ("bogus-progression-warning.jpg", insert(prog, last_sos[2], prog[last_sos[1] : last_sos[2]]), "Inconsistent progression sequence",
         "JWRN_BOGUS_PROGRESSION: the last refinement scan (Ah=1, Al=0) sent twice"),
        ("not-sequential.jpg", sos_field(base, 0, "Se", 62), "Invalid SOS parameters for sequential JPEG", "JWRN_NOT_SEQUENTIAL"),
        ("adobe-xform.jpg", base[:jfif] + app14_adobe(7) + base[nth(base, 0xE0, 0)[2]:], "Unknown Adobe color transform code 7", "JWRN_ADOBE_XFORM (the JFIF marker replaced by an Adobe one)"),
        ("jfif-major.jpg", overwrite(base, jfif + 9, bytes([2, 1])), "unknown JFIF revision number 2.01", "JWRN_JFIF_MAJOR"),
        ("black-extraneous-before-eoi.jpg", insert(black, nth(black, 0xD9, 0)[1], b"\x00" * 4), "extraneous bytes before marker 0xd9",
         "JWRN_EXTRANEOUS_DATA after every row of an all-black image: a written last row that is all zeros"),
        ("bogus-icc.jpg", insert(base, 2, bad_icc()), None, "a bogus ICC_PROFILE marker (JWRN_BOGUS_ICC is only raised by jpeg_read_icc_profile, which OpenCV's reader does not call)"),
    ]
    arith = arithmetic(base)
    if arith is not None:
        cases.append(("arith-clean.jpg", arith, None, "arithmetic coding, no warning"))
        _, s, e = nth(arith, 0xDA, 0)
        # Seeded noise (no 0xFF, so no marker) over the middle of the scan until the decoder meets a
        # code it cannot use: the first seed that does is kept, so the file is reproducible.
        for seed in range(1000):
            noise = bytes(x % 255 for x in np.random.default_rng(seed).integers(0, 255, 48))
            candidate = overwrite(arith, s + (e - s) // 3, noise)
            if any("bad arithmetic code" in m for m in cv2_read(candidate, "imread")[1]):
                cases.append(("arith-bad-code.jpg", candidate, "bad arithmetic code", f"JWRN_ARITH_BAD_CODE (noise seed {seed})"))
                break
        else:
            sys.exit("no seed gave JWRN_ARITH_BAD_CODE")
    else:
        print("JPEGTRAN unset: the arithmetic-coded cases are not generated", file=sys.stderr)

    OUT.mkdir(parents=True, exist_ok=True)
    expected = {
        "generator": "tools/reference/jpeg_warnings.py",
        "opencv": cv2.__version__,
        "opencv_libjpeg": next((l.split("(")[-1].rstrip(")").strip() for l in cv2.getBuildInformation().splitlines() if l.strip().startswith("JPEG:")), ""),
        "files": [],
    }
    failures = []
    for name, data, must, what in cases:
        img, messages = cv2_read(data, "imread")
        from_buffer, _ = cv2_read(data, "imdecode")
        if must is not None and not any(must in x for x in messages):
            failures.append(f"{name}: cv2.imread did not print {must!r} (printed {messages})")
        (OUT / name).write_bytes(data)
        entry = {"file": name, "what": what, "bytes": len(data), "opencv_messages": messages}
        entry["imread"] = None if img is None else {"width": int(img.shape[1]), "height": int(img.shape[0]), "sha256": hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest()}
        entry["imdecode_refuses"] = from_buffer is None
        expected["files"].append(entry)
        print(f"{name:42s} {len(data):6d} B  imread: {'refused' if img is None else f'{img.shape[1]}x{img.shape[0]}'}  imdecode: {'refused' if from_buffer is None else 'decoded'}  {messages}")
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()

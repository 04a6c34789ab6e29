"""Dump cv2.imdecode(IMREAD_COLOR) output of every file in a directory as raw BGR, for
crates/facecompute-core/examples/decoder_parity.rs. Offline tool; the dumps are large and never
committed.

    /work/venvs/image/bin/python tools/reference/dump_decoded.py ../shared/data/deepface /tmp/cv2ref
"""
import json
import sys
from pathlib import Path

import cv2
import numpy as np


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    index = {}
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        data = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        img = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
        rel = str(path.relative_to(src))
        if img is None:
            index[rel] = None
            continue
        name = rel.replace("/", "__") + ".bgr"
        (out / name).write_bytes(np.ascontiguousarray(img).tobytes())
        index[rel] = {"width": int(img.shape[1]), "height": int(img.shape[0]), "raw": name}
    (out / "index.json").write_text(json.dumps(index, indent=1))
    # The same index as TSV (path, width, height, raw file or "-") for the Rust parity example.
    lines = [f"{k}\t{v['width']}\t{v['height']}\t{v['raw']}" if v else f"{k}\t0\t0\t-" for k, v in index.items()]
    (out / "index.tsv").write_text("\n".join(lines) + "\n")
    print(f"{sum(v is not None for v in index.values())} decoded, {sum(v is None for v in index.values())} refused")


if __name__ == "__main__":
    main()

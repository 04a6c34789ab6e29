#!/usr/bin/env python3
"""Where numpy's argsort and torch's sort leave tied values: the orders the MTCNN references sort their
candidates in (crates/facecompute-core/src/detect/mtcnn/sorts.rs reproduces them; its test
crates/facecompute-core/tests/mtcnn_sorts.rs holds it to this fixture).

Run it in both MTCNN reference venvs (tools/reference/mtcnn_reference.py says which); each run adds its
library's orders to test/fixtures/mtcnn/sort-orders.json:

    .venvs/deepface/bin/python tools/reference/mtcnn_sort_orders.py      # numpy 2.1 (mtcnn 1.0.0)
    /work/venvs/fastmtcnn/bin/python tools/reference/mtcnn_sort_orders.py  # numpy 1.26, torch 2.2, torchvision 0.17

The arrays: float32 values drawn from a few levels (many ties), seeded, of the sizes the detectors see
(insertion sort below 17 elements, introsort above, torchvision's per-class path past 1,000 boxes;
for numpy 2's x86-simd-sort: its networks up to 256 elements, its partitions above, and, on the
largest arrays, its std::sort fallback past 2·⌊log2 n⌋ levels).
"""
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[2] / "test" / "fixtures" / "mtcnn" / "sort-orders.json"


def arrays():
    rng = np.random.default_rng(20261127)
    out = []
    for n in [5, 16, 17, 33, 100, 257, 1000, 2500, 300, 777, 4099, 20000]:
        levels = rng.choice([0.6000001, 0.75, 0.9, 0.99999994, 1.0, 0.97], size=n).astype(np.float32)
        out.append(levels)
    return out


def main():
    data = json.loads(OUT.read_text()) if OUT.exists() else {"arrays": None, "orders": {}}
    arrs = arrays()
    data["arrays"] = [[float(x) for x in a] for a in arrs]
    key = f"numpy-{np.__version__}"
    data["orders"][key] = {
        "argsort_float32": [np.argsort(a).tolist() for a in arrs],
        "argsort_float64": [np.argsort(a.astype(np.float64)).tolist() for a in arrs],
    }
    try:
        import torch
        import torchvision
        from torchvision.ops import nms

        def nms_order(a):
            # Boxes far apart: nothing is suppressed, so nms returns its own sort of the scores.
            boxes = torch.tensor([[20.0 * i, 0.0, 20.0 * i + 10, 10.0] for i in range(len(a))])
            return nms(boxes, torch.from_numpy(a.copy()), 0.5).tolist()

        data["orders"][f"torch-{torch.__version__}"] = {
            "sort_desc_float32": [torch.from_numpy(a.copy()).sort(0, descending=True)[1].tolist() for a in arrs],
        }
        data["orders"][f"torchvision-{torchvision.__version__}"] = {
            "nms_order_float32": [nms_order(a) for a in arrs],
        }
    except ImportError:
        pass
    numpys = sorted(k.split("-", 1)[1] for k in data["orders"] if k.startswith("numpy-"))
    torches = [k.split("-", 1)[1] for k in data["orders"] if k.startswith("torch-")]
    visions = [k.split("-", 1)[1] for k in data["orders"] if k.startswith("torchvision-")]
    data["generator"] = "tools/reference/mtcnn_sort_orders.py"
    data["versions"] = {"numpy": " and ".join(numpys), **({"torch": torches[0]} if torches else {}),
                        **({"torchvision": visions[0]} if visions else {})}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {sorted(data['orders'])}")


if __name__ == "__main__":
    main()

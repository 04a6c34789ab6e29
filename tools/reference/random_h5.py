#!/usr/bin/env python3
"""Write a Keras `save_weights` HDF5 file filled with seeded random weights, from a layer manifest.

    python tools/reference/random_h5.py MANIFEST.json OUT.h5 [--seed N]

Needs numpy and h5py only, so the parity test can regenerate exactly the weights that
keras_random_weights.py loaded into DeepFace's Keras models (TensorFlow is never needed at test time).

The manifest (written by keras_random_weights.py from a real `model.save_weights()` file) lists, in file
order, every layer name and its weights (full name, shape, dtype), plus the file's root attributes. Values
are drawn from one `np.random.default_rng(seed)` stream in manifest order, by the weight's kind:

    kernel           N(0,1) * gain / sqrt(fan_in)      fan_in = prod(shape[:-1])
    bias             N(0,1) * 0.05
    gamma            U(0.8, 1.2)
    beta             N(0,1) * 0.1
    moving_mean      N(0,1) * 0.1                       (not 0: the fold must use it)
    moving_variance  U(0.5, 2.0)                        (not 1: the fold must use it)

`gain` comes from the manifest's `init.kernel_gain`. With `init.center_kernels`, each output unit's
kernel is made zero-sum over its fan-in (before scaling): post-ReLU inputs are all positive, and
uncentred random filters pass that common mode on layer after layer until every input gives nearly the
same output. Centred filters keep the outputs input-dependent, which is what the parity test needs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import h5py
import numpy as np


def draw(rng: np.random.Generator, kind: str, shape, gain: float, center: bool) -> np.ndarray:
    shape = tuple(int(s) for s in shape)
    if kind in ("kernel", "depthwise_kernel"):
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        k = rng.standard_normal(shape)
        if center and len(shape) > 1:
            k = k - k.reshape(-1, shape[-1]).mean(axis=0)
        return (k * (gain / np.sqrt(fan_in))).astype(np.float32)
    if kind == "bias":
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)
    if kind == "gamma":
        return rng.uniform(0.8, 1.2, shape).astype(np.float32)
    if kind == "beta":
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    if kind == "moving_mean":
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    if kind == "moving_variance":
        return rng.uniform(0.5, 2.0, shape).astype(np.float32)
    raise ValueError(f"no random rule for weight kind '{kind}'")


def weight_kind(full_name: str) -> str:
    return full_name.split("/")[-1].split(":")[0]


def generate(manifest: dict, seed: int):
    """Yields (layer_name, weight_full_name, array) in manifest order."""
    rng = np.random.default_rng(seed)
    init = manifest.get("init", {})
    gain = float(init.get("kernel_gain", 1.0))
    center = bool(init.get("center_kernels", False))
    for layer in manifest["layers"]:
        for wt in layer["weights"]:
            arr = draw(rng, weight_kind(wt["name"]), wt["shape"], gain, center)
            yield layer["name"], wt["name"], arr


def _attr_list(values):
    # Keras stores name lists as fixed-length byte strings (numpy 'S' arrays).
    enc = [v.encode("utf8") for v in values]
    width = max((len(e) for e in enc), default=1)
    return np.array(enc, dtype=f"S{max(width, 1)}")


def write_h5(manifest: dict, seed: int, out_path: str) -> None:
    out_dir = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(out_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".random_h5.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            for k, v in manifest.get("root_attrs", {}).items():
                f.attrs[k] = v.encode("utf8") if isinstance(v, str) else v
            f.attrs["layer_names"] = _attr_list([l["name"] for l in manifest["layers"]])
            groups = {}
            for layer in manifest["layers"]:
                g = f.create_group(layer["name"])
                g.attrs["weight_names"] = _attr_list([w["name"] for w in layer["weights"]]) if layer["weights"] else np.array([], dtype="S1")
                groups[layer["name"]] = g
            for lname, wname, arr in generate(manifest, seed):
                groups[lname].create_dataset(wname, data=arr)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=None, help="defaults to the manifest's seed")
    a = ap.parse_args()
    with open(a.manifest) as f:
        manifest = json.load(f)
    seed = a.seed if a.seed is not None else int(manifest["seed"])
    write_h5(manifest, seed, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

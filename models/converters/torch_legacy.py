"""Reads a legacy (pre-zip) torch.save checkpoint without PyTorch: a magic/protocol/sys-info pickle
header, the state-dict pickle whose storages are persistent ids, the list of storage keys, then each
storage raw as int64 count + little-endian data. The unpickler resolves only the globals a state dict
needs (OrderedDict, the tensor and parameter rebuilders, storage types) and refuses any other, so a
hostile checkpoint cannot run code. Shared by the RetinaFace MobileNet and facenet-pytorch MTCNN
converters.
"""
from __future__ import annotations

import collections
import pickle
import struct

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name: str):
        if name not in _DTYPES:
            raise ValueError(f"unsupported storage type torch.{name}")
        self.dtype = np.dtype(_DTYPES[name])


class _Storage:
    def __init__(self, key: str, dtype: np.dtype, numel: int):
        self.key, self.dtype, self.numel = key, dtype, numel
        self.array: np.ndarray | None = None


class _LazyTensor:
    def __init__(self, storage: _Storage, offset: int, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def materialize(self) -> np.ndarray:
        base = self.storage.array
        if base is None:
            raise ValueError(f"storage {self.storage.key} was never read")
        if not self.size:
            return np.array(base[self.offset])
        need = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride)) + 1
        if any(n == 0 for n in self.size):
            return np.zeros(self.size, base.dtype)
        if need > base.size:
            raise ValueError("tensor view runs past its storage")
        item = base.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(base[self.offset:], shape=self.size, strides=[s * item for s in self.stride])
        return np.array(view)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, *extra):
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, *extra):
    return data


class _Unpickler(pickle.Unpickler):
    """Resolves only the handful of globals a state dict needs; anything else is refused."""

    def __init__(self, f, storages: dict[str, _Storage]):
        super().__init__(f)
        self._storages = storages

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(name)
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        _, stype, key, _location, numel = pid[:5]
        if len(pid) > 5 and pid[5] is not None:
            raise pickle.UnpicklingError("storage views are not supported")
        if key not in self._storages:
            self._storages[key] = _Storage(key, stype.dtype, int(numel))
        return self._storages[key]


def load_legacy_state_dict(path: str) -> dict[str, np.ndarray]:
    with open(path, "rb") as f:
        if f.read(2) == b"PK":
            raise ValueError("zip-format checkpoint: this converter reads the legacy format only")
        f.seek(0)
        if pickle.load(f) != LEGACY_MAGIC:
            raise ValueError("not a legacy torch.save file (bad magic number)")
        if pickle.load(f) != 1001:
            raise ValueError("unsupported legacy protocol version")
        sys_info = pickle.load(f)
        if not sys_info.get("little_endian", True):
            raise ValueError("big-endian checkpoints are not supported")
        storages: dict[str, _Storage] = {}
        obj = _Unpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            (numel,) = struct.unpack("<q", f.read(8))
            st = storages.get(key)
            if st is None:
                raise ValueError(f"storage {key} is not referenced by the state dict")
            if numel != st.numel:
                raise ValueError(f"storage {key}: {numel} elements on disk, {st.numel} declared")
            nbytes = numel * st.dtype.itemsize
            raw = f.read(nbytes)
            if len(raw) != nbytes:
                raise ValueError("truncated checkpoint")
            st.array = np.frombuffer(raw, dtype=st.dtype.newbyteorder("<")).astype(st.dtype)
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise ValueError("checkpoint does not hold a state dict")
    out = {}
    for k, v in obj.items():
        # Checkpoints saved from nn.DataParallel prefix every key with "module.".
        name = k[len("module."):] if k.startswith("module.") else k
        out[name] = v.materialize() if isinstance(v, _LazyTensor) else np.asarray(v)
    return out

"""The bodies of /verify, /represent and /compare, built the same way for the sync and async clients.

A call is an ordered list of fields. It goes as JSON when every field is JSON already (strings,
numbers, embeddings), and as multipart/form-data when an image travels as bytes or the targets as
binary float32: images as file parts, everything else as text parts, in the order given. Order
matters for /compare: ``source``, ``model_name`` and ``distance_metric`` are written before the
``targets`` part, which lets the gateway compare the rows as they arrive instead of buffering them
(README, "Compare many vectors").
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from ._inputs import Embedding, FileImage, RemoteImage, TextImage


@dataclass(frozen=True)
class BinaryTargets:
    data: bytes


@dataclass(frozen=True)
class CompareSource:
    """One /compare source: an image or an embedding."""

    value: Union[FileImage, TextImage, RemoteImage, Embedding]


Value = Union[FileImage, TextImage, RemoteImage, Embedding, BinaryTargets, CompareSource, List[CompareSource], str, int, float, bool, List[Any]]


@dataclass
class Call:
    path: str
    fields: List[Tuple[str, Value]] = field(default_factory=list)
    #: /represent with a list input: the answer is one list of faces per image, even for one image.
    batch: bool = False

    def add(self, name: str, value: Any) -> None:
        if value is not None:
            self.fields.append((name, value))

    def remote_images(self) -> List[RemoteImage]:
        out: List[RemoteImage] = []
        for _, v in self.fields:
            for item in _flatten(v):
                if isinstance(item, RemoteImage):
                    out.append(item)
        return out

    def replace_remote(self, resolved: Dict[str, Union[FileImage, TextImage]]) -> None:
        """Swaps each RemoteImage for what fetching it (or passing it on) gave."""

        def swap(v: Any) -> Any:
            if isinstance(v, RemoteImage):
                return resolved[v.url]
            if isinstance(v, CompareSource):
                return CompareSource(swap(v.value))
            if isinstance(v, list) and v and isinstance(v[0], CompareSource):
                return [swap(x) for x in v]
            return v

        self.fields = [(n, swap(v)) for n, v in self.fields]


def _flatten(v: Any) -> List[Any]:
    if isinstance(v, CompareSource):
        return [v.value]
    if isinstance(v, list) and v and isinstance(v[0], CompareSource):
        return [x.value for x in v]
    return [v]


def _is_binary(v: Any) -> bool:
    return any(isinstance(x, (FileImage, BinaryTargets)) for x in _flatten(v))


def _json_value(v: Any) -> Any:
    if isinstance(v, TextImage):
        return v.value
    if isinstance(v, Embedding):
        return v.values
    if isinstance(v, CompareSource):
        inner = v.value
        return {"embedding": inner.values} if isinstance(inner, Embedding) else {"img": _json_value(inner)}
    if isinstance(v, list) and v and isinstance(v[0], CompareSource):
        return [_json_value(x) for x in v]
    if isinstance(v, RemoteImage):
        raise AssertionError("remote images are resolved before encoding")
    return v


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v) if not isinstance(v, float) else repr(v)
    return json.dumps(v, separators=(",", ":"), allow_nan=False)


def encode(call: Call) -> Dict[str, Any]:
    """httpx keyword arguments (``json=`` or ``files=``) for the call's body."""
    if not any(_is_binary(v) for _, v in call.fields):
        body: Dict[str, Any] = {}
        for name, v in call.fields:
            value = _json_value(v)
            if name in body:  # a repeated field (represent's batch) becomes a list
                prev = body[name]
                body[name] = prev + [value] if isinstance(prev, list) and call.batch else [prev, value]
            else:
                body[name] = [value] if call.batch and name == "img" else value
        return {"content": json.dumps(body, separators=(",", ":"), allow_nan=False).encode(), "headers": {"content-type": "application/json"}}
    # httpx writes `files` entries in the order given; a (None, text, "text/plain") entry is a text
    # part (no filename), which keeps text and file parts in our order.
    parts: List[Tuple[str, Tuple[Optional[str], Union[str, bytes], str]]] = []
    for name, v in call.fields:
        if isinstance(v, FileImage):
            parts.append((name, (v.filename, v.data, v.content_type)))
        elif isinstance(v, BinaryTargets):
            parts.append((name, ("targets.f32", v.data, "application/octet-stream")))
        elif isinstance(v, CompareSource) and isinstance(v.value, FileImage):
            parts.append((name, (v.value.filename, v.value.data, v.value.content_type)))
        elif isinstance(v, list) and v and isinstance(v[0], CompareSource):
            if any(isinstance(x.value, FileImage) for x in v):
                raise ValueError("several compare sources with an image among them: send the images as base64 (or compare one image source at a time)")
            parts.append((name, (None, _text(_json_value(v)), "text/plain; charset=utf-8")))
        else:
            parts.append((name, (None, _text(_json_value(v)), "text/plain; charset=utf-8")))
    return {"files": parts}

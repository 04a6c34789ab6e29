"""Writes src/facecompute/types.py: a TypedDict per response schema of the service's openapi.json (and
per object nested in one), so the client's results are typed like the JS client's.

    python scripts/gen_types.py            # rewrite src/facecompute/types.py
    python scripts/gen_types.py --check    # exit 1, naming the first differing lines, when it is stale

FC_OPENAPI_JSON overrides the document (default ../../openapi.json). Standard library only. Names: the
schema's for the top level; a nested object is named after its property in PascalCase (with the parent's
name in front when that is taken by another shape); identical shapes share one class. Required keys
are in a base class, optional ones in a ``total=False`` subclass (Python 3.9 has no ``Required``).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "facecompute" / "types.py"
SCHEMAS = ("VerifyResponse", "RepresentResponse", "CompareResponse", "CapabilitiesResponse", "ReadinessResponse", "ErrorResponse")
# Readable names for nested shapes whose property-derived name says little.
RENAMES = {"Img1": "FacialArea", "ResultsItem": "RepresentFace", "Source": "CompareSourceFace", "CompareResponseResultsItem": "CompareResult", "FilesItem": "ModelSourceFile"}
SCALARS = {"string": "str", "number": "float", "integer": "int", "boolean": "bool", "null": "None"}


def pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.replace("-", "_").split("_") if p)


class Gen:
    def __init__(self) -> None:
        self.classes: List[Tuple[str, List[str]]] = []
        self.by_shape: Dict[str, str] = {}
        self.taken: Dict[str, str] = {}

    def type_of(self, schema: Dict[str, Any], name: str, parent: str) -> str:
        for key in ("anyOf", "oneOf"):
            if key in schema:
                parts = [self.type_of(s, name, parent) for s in schema[key]]
                return union(parts)
        kind = schema.get("type")
        if isinstance(kind, list):
            return union([self.type_of({**schema, "type": k}, name, parent) for k in kind])
        if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
            return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
        if kind in SCALARS:
            return SCALARS[kind]
        if kind == "array":
            return f"List[{self.type_of(schema.get('items', {}), name + '_item', parent)}]"
        if kind == "object" or "properties" in schema:
            if not schema.get("properties"):
                extra = schema.get("additionalProperties")
                value = self.type_of(extra, name + "_value", parent) if isinstance(extra, dict) else "Any"
                return f"Dict[str, {value}]"
            return self.typed_dict(schema, name, parent)
        return "Any"

    def typed_dict(self, schema: Dict[str, Any], name: str, parent: str) -> str:
        shape = json.dumps(schema, sort_keys=True)
        if shape in self.by_shape:
            return self.by_shape[shape]
        cls = RENAMES.get(pascal(name), pascal(name))
        if cls in self.taken and self.taken[cls] != shape:
            cls = RENAMES.get(parent + pascal(name), parent + pascal(name))
        self.taken[cls] = shape
        self.by_shape[shape] = cls
        required = set(schema.get("required", []))
        fields = [(k, self.type_of(v, k, cls), k in required, v.get("description")) for k, v in schema["properties"].items()]
        lines: List[str] = []
        req = [f for f in fields if f[2]]
        opt = [f for f in fields if not f[2]]
        doc = schema.get("description")

        def body(items: List[Tuple[str, str, bool, Any]]) -> List[str]:
            out = []
            for k, t, _, d in items:
                if d:
                    out.append(f"    # {' '.join(str(d).split())[:180]}")
                out.append(f"    {k}: {t}")
            return out or ["    pass"]

        if req and opt:
            lines.append(f"class _{cls}Required(TypedDict):")
            lines += body(req)
            lines.append("")
            lines.append("")
            lines.append(f"class {cls}(_{cls}Required, total=False):")
        else:
            lines.append(f"class {cls}(TypedDict{'' if req else ', total=False'}):")
        if doc:
            lines.append(f'    """{" ".join(str(doc).split())[:300]}"""')
        lines += body(opt if req and opt else fields)
        self.classes.append((cls, lines))
        return cls


def union(parts: List[str]) -> str:
    seen: List[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    none = "None" in seen
    rest = [p for p in seen if p != "None"]
    core = rest[0] if len(rest) == 1 else f"Union[{', '.join(rest)}]"
    return f"Optional[{core}]" if none and rest else (core if rest else "None")


def render(doc: Dict[str, Any]) -> str:
    gen = Gen()
    schemas = doc["components"]["schemas"]
    for name in SCHEMAS:
        gen.typed_dict(schemas[name], name, "")
    head = [
        '"""The service\'s responses as TypedDicts, generated from openapi.json by scripts/gen_types.py: do not',
        "edit; run ``python scripts/gen_types.py`` after the document changes (a test fails until then).",
        '"""',
        "from __future__ import annotations",
        "",
        "from typing import Any, Dict, List, Literal, Optional, TypedDict, Union",
        "",
    ]
    body: List[str] = []
    for _, lines in gen.classes:
        body += ["", ""] + lines
    names = sorted(c for c, _ in gen.classes)
    tail = ["", "", "__all__ = ["] + [f'    "{n}",' for n in names] + ["]", ""]
    return "\n".join(head + body + tail)


def main() -> int:
    source = Path(os.environ.get("FC_OPENAPI_JSON") or ROOT.parent.parent / "openapi.json")
    text = render(json.loads(source.read_text()))
    if "--check" in sys.argv[1:]:
        old = OUT.read_text() if OUT.exists() else ""
        if old == text:
            print("src/facecompute/types.py matches openapi.json")
            return 0
        a, b = old.split("\n"), text.split("\n")
        diff = [f"line {i + 1}:\n  committed: {a[i] if i < len(a) else '(none)'}\n  generated: {b[i] if i < len(b) else '(none)'}" for i in range(max(len(a), len(b))) if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)]
        print("src/facecompute/types.py is out of date with openapi.json: run `python scripts/gen_types.py`\n" + "\n".join(diff[:10]), file=sys.stderr)
        return 1
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

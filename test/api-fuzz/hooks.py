"""Schemathesis hooks for test/api-fuzz.test.ts: positive examples that carry real images and real vectors.

A schema can say "a string" or "an array of numbers", not "a JPEG with a face" or "a Facenet embedding",
so bodies drawn from the schema alone stop at 400 invalid_image or embedding_dimension_mismatch and never
reach compute. For the cases Schemathesis draws as schema-valid (positive), this hook replaces, with a
drawn probability, the image fields with real files (JPEG, PNG, WebP, GIF, a face, no face, a truncated
file, a uniform image), the embeddings with vectors the live server computed, and the model and detector
names with allowed ones, keeping every other drawn option (align, thresholds, top_k, metrics, ...).
Negative cases are left alone: they must be refused.

Every compute operation also gets, in each of its media types, one explicit case that must compute (a
face image with enforce_detection false, real vectors): the examples phase sends them whatever the seed,
so the test's "reached compute" checks cannot fail by chance. The fuzzing phase alone left POST /compare
with no 200 in one CI run: it draws few schema-valid cases for that operation (its body is a oneOf), and
with an unlucky seed none of them computed.

The fixtures file (FC_API_FUZZ_FIXTURES) is written by the test: {"images": [paths], "faces": n (the first
n images have a face), "vectors": {model: [[floats]]}, "models": [...], "detectors": [...]}.
"""
import ast
import base64
import builtins
import json
import os
import struct
import threading

import hypothesis.internal.lambda_sources as _lambda_sources
import schemathesis
from hypothesis import strategies as st
from schemathesis.core.parameters import ParameterLocation
from schemathesis.transport.requests import REQUESTS_TRANSPORT, binary_serializer, multipart_serializer

# Hypothesis names a strategy's lambdas by parsing their source file, only for repr(); on Schemathesis's
# own large generator module that parse fails now and then (KeyError, then "AST constructor recursion
# depth mismatch"), which aborted the run as a runtime error. A fixed name changes only what a repr says.
_lambda_sources.lambda_description = lambda f: "lambda"
# The root cause of "AST constructor recursion depth mismatch": CPython 3.11 keeps the depth counter of
# its AST constructor in one per-interpreter state, so two threads turning source into an AST at once
# (the run uses --workers 2; a garbage collection inside one compile can hand the GIL to the other)
# corrupt each other's count (the same message as cpython gh-106905, another path to it). It hit
# Hypothesis's lambda naming above and anyio's lazy importer (anyio and anyio.abc compile their own source
# when first imported, deep inside case generation), and can hit any compile(..., PyCF_ONLY_AST) a worker
# reaches: the run then ends in a runtime error with no API failure. Such compiles are serialised here.
# Reproduced with two threads calling ast.parse under GC churn: a mismatch in every run without the lock,
# none with it.
_compile = builtins.compile
_ast_lock = threading.RLock()


def _serialised_compile(source, filename, mode, flags=0, *args, **kwargs):
    if flags & ast.PyCF_ONLY_AST:
        with _ast_lock:
            return _compile(source, filename, mode, flags, *args, **kwargs)
    return _compile(source, filename, mode, flags, *args, **kwargs)


builtins.compile = _serialised_compile

FIX = json.load(open(os.environ["FC_API_FUZZ_FIXTURES"], encoding="utf-8"))
IMAGES = []
for path in FIX["images"]:
    with open(path, "rb") as f:
        IMAGES.append(f.read())
# File parts. Schemathesis judges a body holding bytes as not schema-valid (it cannot validate them), which
# would turn a positive case negative; so the drawn body holds a placeholder string, and the multipart
# serializer below puts the bytes, with their content type, on the wire.
IMAGE_MARK = "fc-fuzz-image:"
F32_MARK = "fc-fuzz-f32:"
JSON_MARK = "fc-fuzz-json:"
FILES = [f"{IMAGE_MARK}{i}" for i in range(len(IMAGES))]
MODELS = FIX["models"]
DETECTORS = FIX["detectors"]
VECTORS = FIX["vectors"]
ALL_VECTORS = [v for vs in VECTORS.values() for v in vs]

MIME = {b"\x89PNG": "image/png", b"\xff\xd8": "image/jpeg", b"GIF8": "image/gif", b"RIFF": "image/webp", b"BM": "image/bmp"}


def mime_of(data: bytes) -> str:
    for magic, mime in MIME.items():
        if data.startswith(magic):
            return mime
    return "image/jpeg"


image_bytes = st.sampled_from(IMAGES)
image_string = st.one_of(
    image_bytes.map(lambda b: base64.b64encode(b).decode("ascii")),
    image_bytes.map(lambda b: f"data:{mime_of(b)};base64,{base64.b64encode(b).decode('ascii')}"),
)
vector = st.sampled_from(ALL_VECTORS)
vectors = st.lists(vector, min_size=1, max_size=24)


def f32(rows) -> bytes:
    return b"".join(struct.pack(f"<{len(r)}f", *r) for r in rows)


def compare_source(multipart: bool):
    one = st.one_of(image_string.map(lambda s: {"img": s}), vector.map(lambda v: {"embedding": v}))
    many = st.lists(one, min_size=1, max_size=4)
    if multipart:
        # A file part carries one image; JSON text carries the object forms, typed application/json on
        # the wire (Schemathesis picks any of the part's documented types, and an image type makes the
        # server read the part as image bytes).
        return st.one_of(st.sampled_from(FILES), one.map(lambda o: JSON_MARK + json.dumps(o)), many.map(lambda o: JSON_MARK + json.dumps(o)))
    return st.one_of(one, many)


def realistic(body: dict, path: str, multipart: bool):
    """A strategy for `body` with its inputs swapped for real ones (fields the draw did not include stay out)."""
    fields = {}
    img = st.sampled_from(FILES) if multipart else image_string
    if path == "/verify":
        either = img if multipart else st.one_of(image_string, vector)
        for k in ("img1", "img2"):
            if k in body:
                fields[k] = either
    elif path == "/represent":
        if "img" in body:
            fields["img"] = img if multipart else st.one_of(image_string, st.lists(image_string, min_size=1, max_size=3))
    elif path == "/compare":
        if "source" in body:
            fields["source"] = compare_source(multipart)
        if "targets" in body:
            fields["targets"] = vectors.map(lambda rows: F32_MARK + base64.b64encode(f32(rows)).decode("ascii")) if multipart else vectors
        if "targets_b64" in body:
            fields["targets_b64"] = vectors.map(lambda rows: base64.b64encode(f32(rows)).decode("ascii"))
    if "model_name" in body:
        fields["model_name"] = st.sampled_from(MODELS)
    if "detector_backend" in body:
        fields["detector_backend"] = st.sampled_from(DETECTORS)
    return st.fixed_dictionaries(fields).map(lambda new: {**body, **new})


@schemathesis.hook
def before_generate_case(context, strategy):
    op = context.operation
    if op is None or op.method.upper() != "POST":
        return strategy

    def swap(case):
        # Only wholly positive cases: a negative one (any component) must stay refusable as drawn.
        if not isinstance(case.body, dict) or case.meta is None or not case.meta.generation.mode.is_positive or any(
            case.meta.is_negative_at(loc) for loc in ParameterLocation
        ):
            return st.just(case)
        multipart = (case.media_type or "").startswith("multipart/")

        def apply(new_body):
            case.body = new_body
            return case

        # One case in five keeps its drawn inputs (schema-valid strings that are not images, vectors
        # of any length): those must be refused with a documented 4xx, never a 5xx.
        return st.integers(0, 4).flatmap(
            lambda n: st.just(case) if n == 0 else realistic(case.body, op.path, multipart).map(apply)
        )

    return strategy.flatmap(swap)


def _wire(spec):
    """A (filename, value[, content type]) part with a placeholder swapped for its bytes."""
    value = spec[1]
    if isinstance(value, str) and value.startswith(IMAGE_MARK):
        data = IMAGES[int(value[len(IMAGE_MARK):])]
        return (None, data, mime_of(data))
    if isinstance(value, str) and value.startswith(F32_MARK):
        return (None, base64.b64decode(value[len(F32_MARK):]), "application/octet-stream")
    if isinstance(value, str) and value.startswith(JSON_MARK):
        return (None, value[len(JSON_MARK):].encode("utf-8"), "application/json")
    return spec



@REQUESTS_TRANSPORT.serializer("multipart/form-data")
def multipart_with_files(ctx, value):
    out = multipart_serializer(ctx, value)
    if out.get("files"):
        out["files"] = [(name, _wire(spec) if isinstance(spec, tuple) else spec) for name, spec in out["files"]]
    return out


def _known_good():
    """Per compute path, (media type, body) pairs that must answer 200 whatever the image holds."""
    model = MODELS[0]
    rows = VECTORS[model][:3]
    other = min(1, FIX["faces"] - 1)  # a second face, or the first again when there is one
    face, other_face = IMAGES[0], IMAGES[other]
    b64 = lambda b: base64.b64encode(b).decode("ascii")
    # Multipart text fields carry booleans as text; file parts are placeholders _wire swaps for bytes.
    common_json = {"model_name": model, "enforce_detection": False}
    common_form = {"model_name": model, "enforce_detection": "false"}
    return {
        "/verify": [
            ("application/json", {"img1": b64(face), "img2": b64(other_face), **common_json}),
            ("multipart/form-data", {"img1": FILES[0], "img2": FILES[other], **common_form}),
        ],
        "/represent": [
            ("application/json", {"img": b64(face), **common_json}),
            ("multipart/form-data", {"img": FILES[0], **common_form}),
        ],
        "/compare": [
            ("application/json", {"source": {"img": b64(face)}, "targets": rows, **common_json}),
            ("multipart/form-data", {"source": FILES[0], "targets": F32_MARK + b64(f32(rows)), **common_form}),
        ],
    }


KNOWN_GOOD = _known_good()


@schemathesis.hook
def before_add_examples(context, examples):
    op = context.operation
    if op is None or op.method.upper() != "POST":
        return
    for media_type, body in KNOWN_GOOD.get(op.path, []):
        examples.append(op.Case(body=dict(body), media_type=media_type))


# The document's image part types: Schemathesis has byte serializers for most of them, not for BMP.
REQUESTS_TRANSPORT.serializer("image/bmp")(binary_serializer)

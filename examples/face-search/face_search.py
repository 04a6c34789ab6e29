"""Face search (1:N) with your own PostgreSQL and pgvector, facecompute computing the embeddings and
the decisions: the Python version of face-search.ts, the same schema, queries and thresholds.

    enroll: POST /represent (one face per photo)  ->  INSERT into the table of the configuration
            (model, detector, normalization, align, expand_percentage) that made the embedding
    search: POST /represent of the probe  ->  the top N by cosine distance from pgvector's HNSW index
            (hnsw.ef_search and an iterative scan set for the transaction)  ->  POST /compare of the
            probe against those N with the threshold: the service's exact distance and decision

docs/face-search.md explains the choices; test/face-search.test.ts runs this module against
PostgreSQL with pgvector and a live `facecompute serve`. Needs psycopg 3 and pgvector-python
(examples/face-search/requirements.txt); HTTP is the standard library's.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector


@dataclass(frozen=True)
class Service:
    url: str  # the REST gateway, e.g. http://localhost:8080
    key: str  # a REST key (fc_live_...)


@dataclass(frozen=True)
class Recipe:
    """What an embedding was made with; embeddings are comparable only when all of it matches."""

    model: str = "Facenet"
    detector: str = "yunet"
    normalization: str = "base"
    align: bool = True
    expand_percentage: int = 0


DEFAULT_RECIPE = Recipe()

_NAME_PART = re.compile(r"^[A-Za-z0-9]+$")


def table_for(recipe: Recipe) -> str:
    """One table per comparable configuration, e.g. faces_facenet_yunet_base_a1_e0."""
    parts = [recipe.model, recipe.detector, recipe.normalization]
    for p in parts:
        if not _NAME_PART.match(p):
            raise ValueError(f"unexpected name {p}")
    if not (isinstance(recipe.expand_percentage, int) and 0 <= recipe.expand_percentage <= 100):
        raise ValueError(f"unexpected expand_percentage {recipe.expand_percentage}")
    return f"faces_{'_'.join(p.lower() for p in parts)}_a{int(recipe.align)}_e{recipe.expand_percentage}"


def create_schema(conn: psycopg.Connection, recipe: Recipe, dims: int) -> None:
    """The configuration's table, its CHECKs and its HNSW index; idempotent."""
    table = table_for(recipe)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    conn.execute(
        f"""CREATE TABLE IF NOT EXISTS {table} (
          id                bigserial PRIMARY KEY,
          subject           text NOT NULL,
          source            text NOT NULL,
          model             text NOT NULL CHECK (model = '{recipe.model}'),
          detector          text NOT NULL CHECK (detector = '{recipe.detector}'),
          normalization     text NOT NULL CHECK (normalization = '{recipe.normalization}'),
          align             boolean NOT NULL CHECK (align = {str(recipe.align).lower()}),
          expand_percentage integer NOT NULL CHECK (expand_percentage = {recipe.expand_percentage}),
          facial_area       jsonb NOT NULL,
          embedding         vector({int(dims)}) NOT NULL,
          created_at        timestamptz NOT NULL DEFAULT now()
        )"""
    )
    conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_embedding_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
    conn.commit()


def _call(svc: Service, path: str, body: dict[str, Any]) -> Any:
    """POST JSON; waits Retry-After and tries again on 429 and 503 (at most 5 tries)."""
    data = json.dumps(body).encode()
    for attempt in range(1, 6):
        req = urllib.request.Request(
            svc.url.rstrip("/") + path,
            data=data,
            method="POST",
            headers={"authorization": f"Bearer {svc.key}", "content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req) as res:
                return json.load(res)
        except urllib.error.HTTPError as err:
            answer = json.load(err)
            retry_after = err.headers.get("retry-after")
            if err.code in (429, 503) and attempt < 5 and retry_after:
                time.sleep(max(1.0, float(retry_after)))
                continue
            raise RuntimeError(f"{path}: {err.code} {answer.get('error')}: {answer.get('detail')}") from None
    raise AssertionError("unreachable")


def _data_uri(image: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(image).decode()


def represent(svc: Service, recipe: Recipe, images: Sequence[bytes]) -> list[dict[str, Any]]:
    """The largest face of each image, in order (a batch of at most limits.max_batch_images)."""
    answer = _call(
        svc,
        "/represent",
        {
            "img": [_data_uri(i) for i in images] if len(images) > 1 else _data_uri(images[0]),
            "model_name": recipe.model,
            "detector_backend": recipe.detector,
            "normalization": recipe.normalization,
            "align": recipe.align,
            "expand_percentage": recipe.expand_percentage,
            "max_faces": 1,
        },
    )
    per_image = [answer["results"]] if len(images) == 1 else answer["results"]
    faces = []
    for i, found in enumerate(per_image):
        if not found:
            raise RuntimeError(f"image {i}: no face")
        faces.append(found[0])
    return faces


def enroll(conn: psycopg.Connection, svc: Service, recipe: Recipe, photos: Sequence[tuple[str, str, bytes]], batch: int = 16) -> None:
    """Enrolls (subject, source, image bytes) triples, in batches the service accepts."""
    table = table_for(recipe)
    register_vector(conn)
    for i in range(0, len(photos), batch):
        chunk = photos[i : i + batch]
        faces = represent(svc, recipe, [p[2] for p in chunk])
        for (subject, source, _), face in zip(chunk, faces):
            conn.execute(
                f"INSERT INTO {table} (subject, source, model, detector, normalization, align, expand_percentage, facial_area, embedding)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (subject, source, recipe.model, recipe.detector, recipe.normalization, recipe.align, recipe.expand_percentage, json.dumps(face["facial_area"]), Vector(face["embedding"])),
            )
    conn.commit()


def search_settings(candidates: int) -> list[tuple[str, str]]:
    """hnsw.ef_search at least twice the rows asked for; an iterative scan so a WHERE never starves LIMIT."""
    return [("hnsw.ef_search", str(max(40, 2 * candidates))), ("hnsw.iterative_scan", "strict_order")]


def search_embedding(
    conn: psycopg.Connection,
    svc: Service,
    recipe: Recipe,
    probe: Sequence[float],
    threshold: float,
    candidates: int = 10,
    exclude_source: Optional[str] = None,
) -> list[dict[str, Any]]:
    """The nearest enrolled faces to a probe embedding, decided by the service: verified first, nearest first."""
    table = table_for(recipe)
    register_vector(conn)
    with conn.transaction():
        for name, value in search_settings(candidates):
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        rows = conn.execute(
            f"SELECT subject, source, embedding::text, embedding <=> %s AS distance FROM {table}"
            " WHERE source <> %s ORDER BY embedding <=> %s LIMIT %s",
            (Vector(list(probe)), exclude_source or "", Vector(list(probe)), candidates),
        ).fetchall()
    if not rows:
        return []
    targets = [json.loads(r[2]) for r in rows]
    packed = b"".join(struct.pack(f"<{len(t)}f", *t) for t in targets)  # little-endian float32 rows
    answer = _call(
        svc,
        "/compare",
        {
            "source": {"embedding": list(probe)},
            "targets_b64": base64.b64encode(packed).decode(),
            "model_name": recipe.model,
            "distance_metric": "cosine",
            "threshold": threshold,
            "top_k": len(rows),
        },
    )
    matches = [
        {
            "subject": rows[r["index"]][0],
            "source": rows[r["index"]][1],
            "distance": r["distance"],
            "pgvector_distance": float(rows[r["index"]][3]),
            "verified": r["verified"],
            "confidence": r["confidence"],
        }
        for r in answer["results"]
    ]
    return sorted(matches, key=lambda m: (not m["verified"], m["distance"]))


def identify(conn: psycopg.Connection, svc: Service, recipe: Recipe, image: bytes, threshold: float, exclude_source: Optional[str] = None) -> Optional[dict[str, Any]]:
    """Who is this? The verified match nearest to the photo's largest face, or None."""
    (face,) = represent(svc, recipe, [image])
    matches = search_embedding(conn, svc, recipe, face["embedding"], threshold, exclude_source=exclude_source)
    return matches[0] if matches and matches[0]["verified"] else None


def required_far(rows: int, false_match_rate: float) -> float:
    """The per-comparison FAR a gallery of `rows` embeddings allows for at most `false_match_rate` strangers matched."""
    return 1 - (1 - false_match_rate) ** (1 / rows)


def false_match_rate(rows: int, far: float) -> float:
    """The chance that a stranger matches someone in a gallery of `rows` embeddings."""
    return 1 - (1 - far) ** rows


def threshold_for_gallery(points: Iterable[dict[str, Any]], rows: int, false_match: float, min_tar: float = 0.5) -> dict[str, Any]:
    """Of the calibrated points within required_far with TAR >= min_tar, the largest threshold; else None and why."""
    points = list(points)
    need = required_far(rows, false_match)
    ok = sorted((p for p in points if p["far"] <= need and p["tar"] >= min_tar), key=lambda p: -p["threshold"])
    if ok:
        return {"threshold": ok[0]["threshold"], "point": ok[0]["name"], "far": ok[0]["far"], "tar": ok[0]["tar"], "required_far": need}
    strict = [p for p in points if p["far"] <= need]
    tars = ", ".join("%.4f" % p["tar"] for p in strict)
    reason = (
        f"the points with FAR <= {need:.2e} accept too few genuine pairs (TAR {tars} < {min_tar})"
        if strict
        else f"no calibrated point has FAR <= {need:.2e} (the lowest measured is {min(p['far'] for p in points):.2e})"
    )
    return {"threshold": None, "required_far": need, "reason": f"{reason}: measure a threshold on impostor pairs of your own, or search a smaller gallery"}


def calibrated_points(svc: Service, recipe: Recipe) -> list[dict[str, Any]]:
    """The deployment's calibrated points for the recipe's model and detector (cosine), from GET /capabilities."""
    with urllib.request.urlopen(svc.url.rstrip("/") + "/capabilities") as res:
        caps = json.load(res)
    cosine = caps.get("calibration", {}).get("models", {}).get(recipe.model, {}).get(recipe.detector, {}).get("cosine", {})
    return [{"name": k, **v} for k, v in cosine.items() if isinstance(v, dict) and "threshold" in v]


def recommended_threshold(svc: Service, recipe: Recipe, rows: int, false_match: float) -> float:
    """The recipe's threshold for a gallery of `rows` embeddings; raises when there is none."""
    t = threshold_for_gallery(calibrated_points(svc, recipe), rows, false_match)
    if t["threshold"] is None:
        raise RuntimeError(f"{recipe.model} with {recipe.detector}, {rows} rows, false matches <= {false_match}: {t['reason']}")
    return float(t["threshold"])

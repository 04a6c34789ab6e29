"""Runs examples/face-search/face_search.py, the Python recipe, as test/face-search.test.ts asks: reads a
JSON plan on stdin (service, PostgreSQL DSN, gallery photos, strangers, tolerated false-match rate) and
prints one JSON object: the threshold it chose, each gallery photo's match with its own row left out,
each stranger's match, and the gallery arithmetic for the test to compare with the TypeScript one.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "face-search"))

import psycopg  # noqa: E402

import face_search as fs  # noqa: E402

plan = json.load(sys.stdin)
svc = fs.Service(plan["url"], plan["key"])
recipe = fs.DEFAULT_RECIPE
gallery = [(p["subject"], p["source"], Path(p["path"]).read_bytes()) for p in plan["gallery"]]
out: dict = {"table": fs.table_for(recipe)}
with psycopg.connect(plan["dsn"]) as conn:
    threshold = fs.recommended_threshold(svc, recipe, len(gallery), plan["false_match"])
    out["threshold"] = threshold
    fs.create_schema(conn, recipe, plan["dims"])
    fs.enroll(conn, svc, recipe, gallery)
    out["rows"] = conn.execute(f"SELECT count(*) FROM {fs.table_for(recipe)}").fetchone()[0]
    out["gallery"] = []
    for subject, source, image in gallery:
        m = fs.identify(conn, svc, recipe, image, threshold, exclude_source=source)
        out["gallery"].append({"source": source, "subject": subject, "match": m})
    out["strangers"] = []
    for s in plan["strangers"]:
        try:
            m = fs.identify(conn, svc, recipe, Path(s["path"]).read_bytes(), threshold)
            out["strangers"].append({"name": s["name"], "match": m})
        except RuntimeError as err:
            if "422 no_face_detected" not in str(err):
                raise
            out["strangers"].append({"name": s["name"], "no_face": True})
out["arithmetic"] = [
    {"rows": rows, "a": a, "required_far": fs.required_far(rows, a), "false_match_rate": fs.false_match_rate(rows, 1e-3)}
    for rows in (10, 62, 1000)
    for a in (0.01, 0.1)
]
json.dump(out, sys.stdout)

/**
 * Face search (1:N) with your own PostgreSQL and pgvector, facecompute computing the embeddings and the
 * decisions. facecompute stores no faces: you keep the gallery in your database.
 *
 *   enroll: POST /represent (one face per photo)  ->  INSERT the embedding with its model, detector and
 *           normalization into the model's table (vector(128) for Facenet, vector(512) for Facenet512)
 *   search: POST /represent of the probe  ->  the top N by cosine distance from pgvector's HNSW index
 *           ->  POST /compare of the probe against those N (binary float32 targets) with the threshold:
 *           the service's exact distance, DeepFace's decision and confidence
 *
 * pgvector's cosine distance (`<=>`) is 1 - cos, DeepFace's cosine distance, so the service's thresholds
 * apply to it; its float32 arithmetic differs from the service's float64 by about 1e-7, which is why the
 * final decision is the service's. docs/face-search.md explains the choices; test/face-search.test.ts
 * runs this file against PostgreSQL with pgvector and a live `facecompute serve`.
 *
 * Needs only Node's fetch and node-postgres (`pg`); `db` is anything with pg's `query`.
 */

export interface Db {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
}

export interface Service {
  /** The REST gateway, e.g. http://localhost:8080. */
  url: string;
  /** A REST key (fc_live_…). */
  key: string;
}

/** What an embedding was made with. Embeddings are comparable only when all of it matches. */
export interface Recipe {
  model: string;
  detector: string;
  /** DeepFace's input normalization; `base` is the only one its thresholds are calibrated for. */
  normalization: string;
}

/** Facenet with yunet: the default model, with the detector that separates identities best on LFW (docs/choosing-a-threshold.md). */
export const DEFAULT_RECIPE: Recipe = { model: 'Facenet', detector: 'yunet', normalization: 'base' };

export interface Match {
  subject: string;
  source: string;
  /** The service's distance (DeepFace's rounding). */
  distance: number;
  /** pgvector's distance for the same pair. */
  pgvector_distance: number;
  verified: boolean;
  confidence: number;
}

const TABLE_NAME = /^[A-Za-z0-9]+$/;

/** One table per model: embeddings of different models (or dimensions) are never comparable. */
export function tableFor(model: string): string {
  if (!TABLE_NAME.test(model)) throw new Error(`unexpected model name ${model}`);
  return `faces_${model.toLowerCase()}`;
}

/** The table and its HNSW index for one model; idempotent. */
export async function createSchema(db: Db, model: string, dims: number): Promise<void> {
  const table = tableFor(model);
  await db.query('CREATE EXTENSION IF NOT EXISTS vector');
  await db.query(`CREATE TABLE IF NOT EXISTS ${table} (
    id            bigserial PRIMARY KEY,
    subject       text NOT NULL,            -- whose face: your own identifier
    source        text NOT NULL,            -- which photo it came from
    model         text NOT NULL CHECK (model = '${model}'),
    detector      text NOT NULL,
    normalization text NOT NULL,
    facial_area   jsonb NOT NULL,
    embedding     vector(${dims}) NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
  )`);
  // Cosine distance, as DeepFace's default metric; HNSW answers top-N in logarithmic time, approximately:
  // the exact decision is the service's (search below).
  await db.query(`CREATE INDEX IF NOT EXISTS ${table}_embedding_hnsw ON ${table} USING hnsw (embedding vector_cosine_ops)`);
}

/** pgvector's text form of a vector. */
export const toVector = (e: readonly number[]) => `[${e.join(',')}]`;

/** A request to the service; waits Retry-After and tries again on 429 and retryable 503 (at most 5 tries). */
async function call<T>(svc: Service, path: string, body: FormData): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${svc.url.replace(/\/+$/, '')}${path}`, { method: 'POST', headers: { authorization: `Bearer ${svc.key}` }, body });
    const answer = (await res.json()) as T & { error?: string; detail?: string };
    if (res.ok) return answer;
    const retryAfter = Number(res.headers.get('retry-after'));
    if ((res.status === 429 || res.status === 503) && attempt < 5 && Number.isFinite(retryAfter)) {
      await new Promise((r) => setTimeout(r, Math.max(1, retryAfter) * 1000));
      continue;
    }
    throw new Error(`${path}: ${res.status} ${answer.error}: ${answer.detail}`);
  }
}

interface Face {
  embedding: number[];
  facial_area: Record<string, unknown>;
  face_confidence: number;
}

/** The largest face of each image, in order (a batch of at most `limits.max_batch_images`). */
export async function represent(svc: Service, recipe: Recipe, images: ReadonlyArray<{ name: string; bytes: Uint8Array }>): Promise<Face[]> {
  const form = new FormData();
  for (const img of images) form.append('img', new Blob([img.bytes.slice()]), img.name);
  form.append('model_name', recipe.model);
  form.append('detector_backend', recipe.detector);
  form.append('normalization', recipe.normalization);
  form.append('max_faces', '1');
  const answer = await call<{ results: Face[][] | Face[] }>(svc, '/represent', form);
  // One image answers a list of faces, a batch one list per image.
  const perImage = images.length === 1 ? [answer.results as Face[]] : (answer.results as Face[][]);
  return perImage.map((faces, i) => {
    const face = faces[0];
    if (!face) throw new Error(`${images[i]!.name}: no face`);
    return face;
  });
}

/** Enrolls one photo per entry (in batches the service accepts). */
export async function enroll(db: Db, svc: Service, recipe: Recipe, photos: ReadonlyArray<{ subject: string; name: string; bytes: Uint8Array }>, batch = 16): Promise<void> {
  const table = tableFor(recipe.model);
  for (let i = 0; i < photos.length; i += batch) {
    const chunk = photos.slice(i, i + batch);
    const faces = await represent(svc, recipe, chunk);
    for (const [j, face] of faces.entries()) {
      const p = chunk[j]!;
      await db.query(`INSERT INTO ${table} (subject, source, model, detector, normalization, facial_area, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        p.subject, p.name, recipe.model, recipe.detector, recipe.normalization, JSON.stringify(face.facial_area), toVector(face.embedding),
      ]);
    }
  }
}

/** Little-endian float32 rows: /compare's binary targets. */
function float32Rows(rows: ReadonlyArray<readonly number[]>): Uint8Array<ArrayBuffer> {
  const f = new Float32Array(rows.reduce((n, r) => n + r.length, 0));
  let o = 0;
  for (const r of rows) {
    f.set(r, o);
    o += r.length;
  }
  return new Uint8Array(f.buffer);
}

export interface SearchOptions {
  /** The decision threshold (cosine distance): docs/face-search.md says which to take. */
  threshold: number;
  /** Candidates taken from pgvector before the exact decision. */
  candidates?: number;
  /** Leave out photos with this source (to search a gallery for one of its own photos). */
  excludeSource?: string;
}

/** The nearest enrolled faces to a probe embedding, decided by the service: verified ones first, nearest first. */
export async function searchEmbedding(db: Db, svc: Service, recipe: Recipe, probe: readonly number[], o: SearchOptions): Promise<Match[]> {
  const table = tableFor(recipe.model);
  const { rows } = await db.query<{ subject: string; source: string; embedding: string; distance: number }>(
    `SELECT subject, source, embedding::text AS embedding, embedding <=> $1 AS distance
       FROM ${table}
      WHERE model = $2 AND detector = $3 AND normalization = $4 AND source <> $5
      ORDER BY embedding <=> $1
      LIMIT $6`,
    [toVector(probe), recipe.model, recipe.detector, recipe.normalization, o.excludeSource ?? '', o.candidates ?? 10],
  );
  if (rows.length === 0) return [];
  const targets = rows.map((r) => JSON.parse(r.embedding) as number[]);
  // The fields before the binary part: the service then compares the rows as they arrive.
  const form = new FormData();
  form.append('source', JSON.stringify({ embedding: probe }));
  form.append('model_name', recipe.model);
  form.append('distance_metric', 'cosine');
  form.append('threshold', String(o.threshold));
  form.append('targets', new Blob([float32Rows(targets)], { type: 'application/octet-stream' }), 'targets.f32');
  const answer = await call<{ results: Array<{ index: number; distance: number; verified: boolean; confidence: number }> }>(svc, '/compare', form);
  return answer.results
    .map((r) => ({ subject: rows[r.index]!.subject, source: rows[r.index]!.source, distance: r.distance, pgvector_distance: Number(rows[r.index]!.distance), verified: r.verified, confidence: r.confidence }))
    .sort((a, b) => Number(b.verified) - Number(a.verified) || a.distance - b.distance);
}

/** Who is this? The verified match nearest to the probe photo's largest face, or null. */
export async function identify(db: Db, svc: Service, recipe: Recipe, photo: { name: string; bytes: Uint8Array }, o: SearchOptions): Promise<Match | null> {
  const [face] = await represent(svc, recipe, [photo]);
  const matches = await searchEmbedding(db, svc, recipe, face!.embedding, o);
  return matches[0]?.verified ? matches[0] : null;
}

/** The threshold this recipe recommends for 1:N search: the deployment's calibrated FAR ≤ 1e-3 point for the model and detector, else DeepFace's. */
export async function recommendedThreshold(svc: Service, recipe: Recipe): Promise<number> {
  const caps = (await (await fetch(`${svc.url.replace(/\/+$/, '')}/capabilities`)).json()) as {
    thresholds: Record<string, Record<string, number>>;
    calibration?: { models?: Record<string, Record<string, Record<string, { far_1e_3?: { threshold: number } }>>> };
  };
  return caps.calibration?.models?.[recipe.model]?.[recipe.detector]?.['cosine']?.far_1e_3?.threshold ?? caps.thresholds[recipe.model]!['cosine']!;
}

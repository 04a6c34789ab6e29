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

/** A pool (node-postgres' pg.Pool): a search takes one connection for its transaction. */
export interface Pool extends Db {
  connect(): Promise<Db & { release(): void }>;
}

export interface Service {
  /** The REST gateway, e.g. http://localhost:8080. */
  url: string;
  /** A REST key (fc_live_…). */
  key: string;
}

/**
 * What an embedding was made with. Two embeddings are comparable only when all of it matches, so each
 * configuration has a table of its own (tableFor): a search never has to filter by it.
 */
export interface Recipe {
  model: string;
  detector: string;
  /** DeepFace's input normalization; `base` is the only one its thresholds are calibrated for. */
  normalization: string;
  /** Eye alignment (DeepFace's `align`, true by default). */
  align: boolean;
  /** DeepFace's `expand_percentage`: how much the detected box is grown before embedding (0 by default). */
  expand_percentage: number;
}

/** Facenet with yunet: the default model, with a detector whose LFW calibration has usable strict thresholds (docs/choosing-a-threshold.md). */
export const DEFAULT_RECIPE: Recipe = { model: 'Facenet', detector: 'yunet', normalization: 'base', align: true, expand_percentage: 0 };

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

const NAME_PART = /^[A-Za-z0-9]+$/;

/**
 * One table per comparable configuration: model, detector, normalization, align, expand_percentage
 * (e.g. faces_facenet_yunet_base_a1_e0). Rows of two configurations never meet in one index, so the
 * HNSW scan needs no filter, which pgvector would apply only after the scan.
 */
export function tableFor(recipe: Recipe): string {
  const parts = [recipe.model, recipe.detector, recipe.normalization];
  for (const p of parts) if (!NAME_PART.test(p)) throw new Error(`unexpected name ${p}`);
  if (!Number.isInteger(recipe.expand_percentage) || recipe.expand_percentage < 0 || recipe.expand_percentage > 100) throw new Error(`unexpected expand_percentage ${recipe.expand_percentage}`);
  return `faces_${parts.map((p) => p.toLowerCase()).join('_')}_a${recipe.align ? 1 : 0}_e${recipe.expand_percentage}`;
}

/** The configuration's table and its HNSW index; idempotent. `dims` is /capabilities' embedding_dims[model]. */
export async function createSchema(db: Db, recipe: Recipe, dims: number): Promise<void> {
  const table = tableFor(recipe);
  await db.query('CREATE EXTENSION IF NOT EXISTS vector');
  // The configuration is the table's: CHECKs keep a row of another configuration out of it.
  await db.query(`CREATE TABLE IF NOT EXISTS ${table} (
    id                bigserial PRIMARY KEY,
    subject           text NOT NULL,            -- whose face: your own identifier
    source            text NOT NULL,            -- which photo it came from
    model             text NOT NULL CHECK (model = '${recipe.model}'),
    detector          text NOT NULL CHECK (detector = '${recipe.detector}'),
    normalization     text NOT NULL CHECK (normalization = '${recipe.normalization}'),
    align             boolean NOT NULL CHECK (align = ${recipe.align}),
    expand_percentage integer NOT NULL CHECK (expand_percentage = ${recipe.expand_percentage}),
    facial_area       jsonb NOT NULL,
    embedding         vector(${dims}) NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
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
  form.append('align', String(recipe.align));
  form.append('expand_percentage', String(recipe.expand_percentage));
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
  const table = tableFor(recipe);
  for (let i = 0; i < photos.length; i += batch) {
    const chunk = photos.slice(i, i + batch);
    const faces = await represent(svc, recipe, chunk);
    for (const [j, face] of faces.entries()) {
      const p = chunk[j]!;
      await db.query(`INSERT INTO ${table} (subject, source, model, detector, normalization, align, expand_percentage, facial_area, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
        p.subject, p.name, recipe.model, recipe.detector, recipe.normalization, recipe.align, recipe.expand_percentage, JSON.stringify(face.facial_area), toVector(face.embedding),
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
  /** The decision threshold (cosine distance): thresholdForGallery says which to take. */
  threshold: number;
  /** Candidates taken from pgvector before the exact decision. */
  candidates?: number;
  /** Leave out photos with this source (to search a gallery for one of its own photos). */
  excludeSource?: string;
}

/**
 * pgvector's HNSW settings for one search, in its transaction: `hnsw.ef_search` (the candidate list the
 * scan keeps; 40 by default) at least twice the rows asked for, and `hnsw.iterative_scan` so that a
 * WHERE clause (here `source <> …`; in your schema a tenant, say) that drops rows after the scan makes
 * pgvector scan on instead of returning fewer rows than LIMIT. `strict_order` keeps the distances sorted.
 */
export function searchSettings(candidates: number): Array<[string, string]> {
  return [
    ['hnsw.ef_search', String(Math.max(40, 2 * candidates))],
    ['hnsw.iterative_scan', 'strict_order'],
  ];
}

/** The nearest enrolled faces to a probe embedding, decided by the service: verified ones first, nearest first. */
export async function searchEmbedding(pool: Pool, svc: Service, recipe: Recipe, probe: readonly number[], o: SearchOptions): Promise<Match[]> {
  const table = tableFor(recipe);
  const candidates = o.candidates ?? 10;
  const client = await pool.connect();
  let rows: Array<{ subject: string; source: string; embedding: string; distance: number }>;
  try {
    await client.query('BEGIN');
    for (const [name, value] of searchSettings(candidates)) await client.query('SELECT set_config($1, $2, true)', [name, value]);
    ({ rows } = await client.query<{ subject: string; source: string; embedding: string; distance: number }>(
      `SELECT subject, source, embedding::text AS embedding, embedding <=> $1 AS distance
         FROM ${table}
        WHERE source <> $2
        ORDER BY embedding <=> $1
        LIMIT $3`,
      [toVector(probe), o.excludeSource ?? '', candidates],
    ));
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
  if (rows.length === 0) return [];
  const targets = rows.map((r) => JSON.parse(r.embedding) as number[]);
  // The fields before the binary part: the service then compares the rows as they arrive. top_k keeps
  // every candidate, nearest first.
  const form = new FormData();
  form.append('source', JSON.stringify({ embedding: probe }));
  form.append('model_name', recipe.model);
  form.append('distance_metric', 'cosine');
  form.append('threshold', String(o.threshold));
  form.append('top_k', String(rows.length));
  form.append('targets', new Blob([float32Rows(targets)], { type: 'application/octet-stream' }), 'targets.f32');
  const answer = await call<{ results: Array<{ index: number; distance: number; verified: boolean; confidence: number }> }>(svc, '/compare', form);
  return answer.results
    .map((r) => ({ subject: rows[r.index]!.subject, source: rows[r.index]!.source, distance: r.distance, pgvector_distance: Number(rows[r.index]!.distance), verified: r.verified, confidence: r.confidence }))
    .sort((a, b) => Number(b.verified) - Number(a.verified) || a.distance - b.distance);
}

/** Who is this? The verified match nearest to the probe photo's largest face, or null. */
export async function identify(db: Pool, svc: Service, recipe: Recipe, photo: { name: string; bytes: Uint8Array }, o: SearchOptions): Promise<Match | null> {
  const [face] = await represent(svc, recipe, [photo]);
  const matches = await searchEmbedding(db, svc, recipe, face!.embedding, o);
  return matches[0]?.verified ? matches[0] : null;
}

/** A calibrated point of /capabilities.calibration: a threshold and the rates measured at it. */
export interface CalibratedPoint {
  name: string;
  threshold: number;
  /** False-accept rate: impostor pairs accepted, of those measured. */
  far: number;
  /** True-accept rate: genuine pairs accepted. */
  tar: number;
}

/**
 * The per-comparison false-accept rate a gallery of `rows` embeddings allows when at most a fraction
 * `falseMatchRate` of searches for someone who is not enrolled may return a match: a stranger is
 * compared with every row, so P(some row accepted) = 1 − (1 − far)^rows ≤ falseMatchRate.
 */
export function requiredFar(rows: number, falseMatchRate: number): number {
  return 1 - (1 - falseMatchRate) ** (1 / rows);
}

/** The chance that a stranger matches someone in a gallery of `rows` embeddings at a per-comparison `far`. */
export function falseMatchRate(rows: number, far: number): number {
  return 1 - (1 - far) ** rows;
}

export type GalleryThreshold =
  | { threshold: number; point: string; far: number; tar: number; requiredFar: number }
  | { threshold: null; requiredFar: number; reason: string };

/**
 * The threshold for a gallery of `rows` embeddings (people × photos each: every photo is a chance for a
 * false match): of the calibrated points whose measured FAR is within requiredFar and whose TAR is at
 * least `minTar`, the one with the largest threshold (the most true accepts). None when the calibration
 * cannot vouch for so low a rate (it measured FAR down to 1 in its impostor pairs) or only at a TAR that
 * would miss most enrolled people: then measure on impostor pairs of your own.
 */
export function thresholdForGallery(points: readonly CalibratedPoint[], rows: number, falseMatch: number, minTar = 0.5): GalleryThreshold {
  const need = requiredFar(rows, falseMatch);
  const ok = points.filter((p) => p.far <= need && p.tar >= minTar).sort((a, b) => b.threshold - a.threshold);
  const best = ok[0];
  if (best) return { threshold: best.threshold, point: best.name, far: best.far, tar: best.tar, requiredFar: need };
  const strict = points.filter((p) => p.far <= need);
  const reason = strict.length
    ? `the points with FAR <= ${need.toExponential(2)} accept too few genuine pairs (TAR ${strict.map((p) => p.tar.toFixed(4)).join(', ')} < ${minTar})`
    : `no calibrated point has FAR <= ${need.toExponential(2)} (the lowest measured is ${Math.min(...points.map((p) => p.far)).toExponential(2)})`;
  return { threshold: null, requiredFar: need, reason: `${reason}: measure a threshold on impostor pairs of your own, or search a smaller gallery` };
}

/** The deployment's calibrated points for the recipe's model and detector (cosine), from GET /capabilities. */
export async function calibratedPoints(svc: Service, recipe: Recipe): Promise<CalibratedPoint[]> {
  const caps = (await (await fetch(`${svc.url.replace(/\/+$/, '')}/capabilities`)).json()) as {
    calibration?: { models?: Record<string, Record<string, Record<string, Record<string, { threshold: number; far: number; tar: number } | number>>>> };
  };
  const cosine = caps.calibration?.models?.[recipe.model]?.[recipe.detector]?.['cosine'] ?? {};
  return Object.entries(cosine)
    .filter((e): e is [string, { threshold: number; far: number; tar: number }] => typeof e[1] === 'object' && e[1] !== null && 'threshold' in e[1])
    .map(([name, p]) => ({ name, threshold: p.threshold, far: p.far, tar: p.tar }));
}

/** The recipe's threshold for a gallery of `rows` embeddings and a tolerated false-match rate (throws when there is none). */
export async function recommendedThreshold(svc: Service, recipe: Recipe, rows: number, falseMatch: number): Promise<number> {
  const t = thresholdForGallery(await calibratedPoints(svc, recipe), rows, falseMatch);
  if (t.threshold === null) throw new Error(`${recipe.model} with ${recipe.detector}, ${rows} rows, false matches <= ${falseMatch}: ${t.reason}`);
  return t.threshold;
}

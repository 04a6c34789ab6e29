/**
 * What this deployment can serve, decided before anything loads: allowed ∩ installed models and
 * detectors, why each other one is unavailable, and the defaults. The configured default model and
 * detector are served as configured or not at all: when one cannot be, `serve` and `model-server`
 * refuse to start (DefaultsUnservableError, with every missing file, every place and source tried and
 * the command that fetches it), unless FACECOMPUTE_ALLOW_DEGRADED_START says to start anyway. Then the
 * effective default and the reason are published (/capabilities, /readiness) and `skip`, which embeds
 * the whole image, is never made the default in place of a detector.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { loadManifest, type DetectorEntry, type Manifest } from '../models/manifest.js';
import { artifactStatus, describeProblems, type ArtifactStatus } from '../models/catalog.js';
import { describeFailure, readFetchLog, type FetchLog } from '../models/fetch-log.js';
import { explainMissing, formatMissing, type MissingWeight } from '../models/explain.js';
import type { WeightLocations } from '../models/weights.js';
import { EXIT_DEFAULTS_UNSERVABLE } from '../errors/exit-codes.js';
import { RETINAFACE_BACKBONES, type DetectorEngine, type RetinafaceBackbone } from './engines.js';


export interface PlannedModel {
  name: string;
  files: string[];
  status?: ArtifactStatus;
  test: boolean;
}

export interface PlannedDetector {
  name: string;
  engine: DetectorEngine;
  status?: ArtifactStatus;
}

/** A configured default that cannot be served, explained in full. */
export interface UnservableDefault {
  kind: 'model' | 'detector';
  name: string;
  setting: 'FACECOMPUTE_DEFAULT_MODEL' | 'FACECOMPUTE_DEFAULT_DETECTOR' | 'FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR';
  /** One line: what is wrong (not allowed, or which files are missing and why). */
  reason: string;
  /** Per missing weight file: every place and source tried, and why each failed. */
  missing: MissingWeight[];
  /** The command that fetches what is missing. */
  fix: string;
}

export interface ServingPlan {
  models: PlannedModel[];
  detectors: PlannedDetector[];
  retinafaceVariant: RetinafaceBackbone | null;
  /** Allowed but not servable, with the reason. */
  unavailable: Record<string, string>;
  defaultModel: string;
  defaultModelReason: string;
  defaultDetector: string;
  defaultDetectorReason: string;
  /** The configured defaults that cannot be served; empty when both can. */
  unservable: UnservableDefault[];
  /** Why the detector fallback (FALLBACK_DETECTOR) is absent, with the command that fetches it; '' when served. */
  fallbackUnavailable: string;
  /** The fallback's full explanation, refused at start when FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR is true. */
  fallbackUnservable: UnservableDefault | null;
  /** One command that fetches every allowed model and detector that is missing; '' when none is. */
  fetchCommand: string;
}

/** The contract's pre-warmed fallback: the detector tried when `opencv` finds no face. */
export const FALLBACK_DETECTOR = 'retinaface';

export class DefaultsUnservableError extends Error {
  override name = 'DefaultsUnservableError';
  readonly code = 'defaults_unservable';
  /** The process exits with it (src/cli/main.ts), and `serve` does not restart a child that did. */
  readonly exitCode = EXIT_DEFAULTS_UNSERVABLE;
  constructor(
    readonly unservable: UnservableDefault[],
    cacheDir: string,
  ) {
    super(refusalMessage(unservable, cacheDir));
  }
}

export function testOnnxPath(cfg: Config, model: string): string {
  return join(cfg.models.cacheDir, 'test-onnx', `${model}.onnx`);
}

/**
 * The engines a manifest detector can be served by, in the order tried: a `retinaface` entry by
 * each allowed backbone it has a variant for, any other by the engine of its name.
 */
export function detectorEngines(entry: DetectorEntry, backbone: Config['models']['retinafaceBackbone']): Array<{ id: string; engine: DetectorEngine; backbone: RetinafaceBackbone | null }> {
  if (entry.engine !== 'retinaface') return [{ id: '', engine: entry.engine, backbone: null }];
  const wanted = backbone === 'auto' ? RETINAFACE_BACKBONES : RETINAFACE_BACKBONES.filter((b) => b === backbone);
  return wanted.filter((b) => entry.variants?.[b]).map((b) => ({ id: b, engine: `retinaface:${b}` as const, backbone: b }));
}

/** Why an artifact is unavailable, in one line: its missing files and, when a fetch was tried, why it failed. */
function unavailableReason(id: string, s: ArtifactStatus, log: FetchLog): string {
  const failure = s.artifact.weights.map((w) => log[w.file]).find((r) => r && !r.ok);
  const fetch = `\`facecompute models fetch ${id.split(':')[0]}\``;
  return `${describeProblems(s.problems)}; ${failure ? `${describeFailure(failure)}; ${fetch} fetches it where a source is reachable` : `${fetch} installs it`}`;
}

export async function planServing(cfg: Config, manifest: Manifest = loadManifest()): Promise<ServingPlan> {
  const loc: WeightLocations = { weightsDir: cfg.models.weightsDir, cacheDir: cfg.models.cacheDir, sources: cfg.models.weightSources };
  const log = await readFetchLog(cfg.models.cacheDir);
  const plan: ServingPlan = { models: [], detectors: [], retinafaceVariant: null, unavailable: {}, defaultModel: '', defaultModelReason: '', defaultDetector: '', defaultDetectorReason: '', unservable: [], fallbackUnavailable: '', fallbackUnservable: null, fetchCommand: '' };
  /** Status of what could not be served, for the full explanation of a default. */
  const missing = new Map<string, ArtifactStatus[]>();

  for (const name of cfg.models.allowedModels) {
    if (!manifest.recognition[name]) {
      plan.unavailable[name] = 'unknown model';
      continue;
    }
    const s = await artifactStatus(name, loc, manifest);
    if (s.installed) plan.models.push({ name, files: s.weightPaths, status: s, test: false });
    else if (cfg.models.testWeights && existsSync(testOnnxPath(cfg, name))) plan.models.push({ name, files: [testOnnxPath(cfg, name)], test: true });
    else {
      plan.unavailable[name] = unavailableReason(name, s, log);
      missing.set(name, [s]);
    }
  }
  for (const name of cfg.models.allowedDetectors) {
    const entry = manifest.detectors[name];
    if (!entry) {
      plan.unavailable[name] = 'unknown detector';
      continue;
    }
    if (entry.engine === 'skip') {
      plan.detectors.push({ name, engine: 'skip' });
      continue;
    }
    // `retinaface` is served by one of its backbones: ResNet-50 (DeepFace's) when installed and allowed.
    const tried: ArtifactStatus[] = [];
    let served = false;
    for (const e of detectorEngines(entry, cfg.models.retinafaceBackbone)) {
      const s = await artifactStatus(e.id ? `${name}:${e.id}` : name, loc, manifest);
      if (s.installed) {
        if (e.backbone) plan.retinafaceVariant = e.backbone;
        plan.detectors.push({ name, engine: e.engine, status: s });
        served = true;
        break;
      }
      tried.push(s);
    }
    if (!served) {
      plan.unavailable[name] = tried.map((s) => `${s.id === name ? '' : `${s.id.split(':')[1]}: `}${unavailableReason(s.id, s, log)}`).join('; ');
      missing.set(name, tried);
    }
  }

  const modelNames = plan.models.map((m) => m.name);
  const configuredModel = cfg.models.defaultModel;
  if (modelNames.includes(configuredModel)) plan.defaultModel = configuredModel;
  else {
    plan.defaultModel = modelNames[0] ?? '';
    const why = cfg.models.allowedModels.includes(configuredModel) ? (plan.unavailable[configuredModel] ?? 'not installed') : 'not in FACECOMPUTE_ALLOWED_MODELS';
    plan.defaultModelReason = `${configuredModel} is not installed (${why}); ${plan.defaultModel ? `the effective default is ${plan.defaultModel}` : 'no model is installed'}`;
    plan.unservable.push(await unservable('model', configuredModel, why, missing.get(configuredModel), loc, log));
  }
  const detectorNames = plan.detectors.map((d) => d.name);
  const configuredDetector = cfg.models.defaultDetector;
  if (detectorNames.includes(configuredDetector)) plan.defaultDetector = configuredDetector;
  else {
    // Never `skip` in place of a detector: it embeds the whole image. With no other detector, the
    // configured name stays the default, is not allowed, and a request must name its detector.
    const other = detectorNames.find((d) => d !== 'skip');
    plan.defaultDetector = other ?? configuredDetector;
    const why = cfg.models.allowedDetectors.includes(configuredDetector) ? (plan.unavailable[configuredDetector] ?? 'not installed') : 'not in FACECOMPUTE_ALLOWED_DETECTORS';
    plan.defaultDetectorReason = `${configuredDetector} cannot be served (${why}); ${other ? `the effective default is ${other}` : 'no other detector is installed, so a request must name its detector_backend (skip, the whole image, is never a default)'}`;
    plan.unservable.push(await unservable('detector', configuredDetector, why, missing.get(configuredDetector), loc, log));
  }
  const fetchable = Object.keys(plan.unavailable).filter((n) => missing.has(n));
  plan.fetchCommand = fetchable.length > 0 ? `facecompute models fetch ${fetchable.join(' ')}` : '';
  if (!detectorNames.includes(FALLBACK_DETECTOR)) {
    const allowed = cfg.models.allowedDetectors.includes(FALLBACK_DETECTOR);
    const why = allowed ? (plan.unavailable[FALLBACK_DETECTOR] ?? 'not installed') : 'not in FACECOMPUTE_ALLOWED_DETECTORS';
    plan.fallbackUnavailable =
      `the contract's pre-warmed fallback detector ${FALLBACK_DETECTOR} is absent, so an image where opencv finds no face gets no fallback (${why}); ` +
      (allowed ? `\`facecompute models fetch ${FALLBACK_DETECTOR}\` fetches it (its weights come only from their canonical URLs)` : `allow it in FACECOMPUTE_ALLOWED_DETECTORS`);
    plan.fallbackUnservable = { ...(await unservable('detector', FALLBACK_DETECTOR, why, missing.get(FALLBACK_DETECTOR), loc, log)), setting: 'FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR' };
  }
  return plan;
}

async function unservable(kind: 'model' | 'detector', name: string, reason: string, statuses: ArtifactStatus[] | undefined, loc: WeightLocations, log: FetchLog): Promise<UnservableDefault> {
  const missing: MissingWeight[] = [];
  for (const s of statuses ?? []) missing.push(...(await explainMissing(s.artifact, s, loc, log)));
  return {
    kind,
    name,
    setting: kind === 'model' ? 'FACECOMPUTE_DEFAULT_MODEL' : 'FACECOMPUTE_DEFAULT_DETECTOR',
    reason,
    missing,
    fix: statuses ? `facecompute models fetch ${name}` : `allow it (FACECOMPUTE_ALLOWED_${kind === 'model' ? 'MODELS' : 'DETECTORS'}), or choose another default`,
  };
}

/** The operator's message: what cannot be served, every file, place and source tried, and the fix. */
export function refusalMessage(unservable: UnservableDefault[], cacheDir: string): string {
  const lines = [`cannot serve the configured default${unservable.length > 1 ? 's' : ''} (models cache ${cacheDir}, FACECOMPUTE_MODELS_CACHE):`];
  for (const u of unservable) {
    lines.push(`  ${u.kind} ${u.name} (${u.setting}): ${u.missing.length > 0 ? `missing ${u.missing.map((m) => m.file).join(', ')}` : u.reason}`);
    if (u.missing.length > 0) lines.push(formatMissing(u.missing));
    lines.push(`    fix: ${u.fix}${u.fix.startsWith('facecompute ') ? ` with the same FACECOMPUTE_MODELS_CACHE (from a checkout: node bin/facecompute.js ${u.fix.slice('facecompute '.length)}; bash scripts/bootstrap.sh serve fetches every default)` : ''}`);
  }
  if (unservable.some((u) => u.setting !== 'FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR')) lines.push('  or start without it: FACECOMPUTE_ALLOW_DEGRADED_START=true (/capabilities and /readiness then say what is missing)');
  if (unservable.some((u) => u.setting === 'FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR')) lines.push(`  or start without the detector fallback: FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=false (/capabilities and /readiness then say it is absent)`);
  return lines.join('\n');
}

/**
 * Throws DefaultsUnservableError when a configured default cannot be served and degraded starts are not
 * allowed, or when the detector fallback cannot be served and FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR is true.
 */
export function assertDefaultsServable(cfg: Config, plan: ServingPlan): void {
  const refused = cfg.models.allowDegradedStart ? [] : [...plan.unservable];
  if (cfg.models.requireFallbackDetector && plan.fallbackUnservable) refused.push(plan.fallbackUnservable);
  if (refused.length > 0) throw new DefaultsUnservableError(refused, cfg.models.cacheDir);
}

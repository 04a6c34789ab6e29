/**
 * Thresholds beyond DeepFace's: per model, detector and metric, the distance threshold at a false-accept
 * rate of 1e-2 and 1e-3 and the one with the best accuracy, measured on LFW View 1 DevTrain by
 * tools/calibration/roc.ts and committed as models/calibration/lfw-devtrain.json. DeepFace's fixed
 * thresholds stay the default; /capabilities publishes these (`calibration`) for callers who pass
 * `threshold` per request.
 *
 * The ROC arithmetic lives here too, so that the tool and its test share it: `verified` is
 * `distance <= threshold`, thresholds are taken halfway between two consecutive distinct distances of
 * the pairs (any threshold in between decides every pair alike; the middle is the one that leaves the
 * most room on both sides).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import type { DistanceMetric } from '../vocabulary/closed-sets.js';

export interface OperatingPoint {
  threshold: number;
  /** Impostor pairs accepted / impostor pairs, on the calibration pairs. */
  far: number;
  /** Genuine pairs accepted / genuine pairs. */
  tar: number;
  accuracy: number;
}

export interface MetricCalibration {
  /** The largest threshold whose FAR is at most 1e-2, and what it gives. */
  far_1e_2: OperatingPoint;
  far_1e_3: OperatingPoint;
  /** The threshold with the best accuracy (the centre of the first run of best thresholds). */
  best_accuracy: OperatingPoint;
  /** DeepFace's fixed threshold (the default) on the same pairs, for comparison. */
  deepface: OperatingPoint;
  /** Area under the ROC curve. */
  auc: number;
  /** [FAR, TAR] points of the ROC curve, FAR ascending (for charts; not every point). */
  curve: Array<[number, number]>;
}

export interface CalibrationFile {
  dataset: string;
  pairs: { genuine: number; impostor: number };
  generator: string;
  settings: Record<string, unknown>;
  note: string;
  /** model → detector → metric. */
  models: Record<string, Record<string, Partial<Record<DistanceMetric, MetricCalibration>>>>;
}

/** What /capabilities serves: the file without the curves, for the models and detectors served. */
export interface CapabilitiesCalibration {
  dataset: string;
  pairs: { genuine: number; impostor: number };
  note: string;
  models: Record<string, Record<string, Partial<Record<DistanceMetric, Omit<MetricCalibration, 'curve'>>>>>;
}

export const CALIBRATION_FILE = join(PACKAGE_ROOT, 'models', 'calibration', 'lfw-devtrain.json');

export function loadCalibration(path = CALIBRATION_FILE): CalibrationFile {
  return JSON.parse(readFileSync(path, 'utf8')) as CalibrationFile;
}

/** The calibration of the models and detectors that can serve, without the ROC curves. */
export function servedCalibration(file: CalibrationFile, models: readonly string[], detectors: readonly string[]): CapabilitiesCalibration {
  const out: CapabilitiesCalibration['models'] = {};
  for (const m of models) {
    const byDet = file.models[m];
    if (!byDet) continue;
    for (const d of detectors) {
      const byMetric = byDet[d];
      if (!byMetric) continue;
      for (const [metric, c] of Object.entries(byMetric) as Array<[DistanceMetric, MetricCalibration]>) {
        const { curve: _curve, ...rest } = c;
        ((out[m] ??= {})[d] ??= {})[metric] = rest;
      }
    }
  }
  return { dataset: file.dataset, pairs: file.pairs, note: file.note, models: out };
}

/** One pair: its distance (null when a side had no face: never accepted) and whether it is genuine. */
export interface ScoredPair {
  distance: number | null;
  genuine: boolean;
}

const r7 = (x: number) => Math.round(x * 1e7) / 1e7;

/**
 * Thresholds that give distinct decisions: below every distance, halfway between consecutive distinct
 * distances, and above every distance; with the counts each one accepts.
 */
export function rocPoints(pairs: ScoredPair[]): Array<{ threshold: number; tp: number; fp: number }> {
  const finite = pairs.filter((p) => p.distance !== null && Number.isFinite(p.distance)) as Array<{ distance: number; genuine: boolean }>;
  finite.sort((a, b) => a.distance - b.distance);
  const out: Array<{ threshold: number; tp: number; fp: number }> = [];
  if (finite.length === 0) return [{ threshold: 0, tp: 0, fp: 0 }];
  out.push({ threshold: r7(finite[0]!.distance - 1e-6), tp: 0, fp: 0 });
  let tp = 0, fp = 0;
  for (let i = 0; i < finite.length; i++) {
    if (finite[i]!.genuine) tp++;
    else fp++;
    const next = finite[i + 1];
    if (next && next.distance === finite[i]!.distance) continue;
    const threshold = next ? r7((finite[i]!.distance + next.distance) / 2) : r7(finite[i]!.distance + 1e-6);
    out.push({ threshold, tp, fp });
  }
  return out;
}

function counts(pairs: ScoredPair[]): { P: number; N: number } {
  const P = pairs.filter((p) => p.genuine).length;
  const N = pairs.length - P;
  if (P === 0 || N === 0) throw new Error('calibration needs genuine and impostor pairs');
  return { P, N };
}

const point = (P: number, N: number, threshold: number, tp: number, fp: number): OperatingPoint => ({ threshold, far: fp / N, tar: tp / P, accuracy: (tp + (N - fp)) / (P + N) });

/** The largest threshold whose FAR is at most `far` (it accepts the most genuine pairs). */
export function atFar(pairs: ScoredPair[], far: number): OperatingPoint {
  const { P, N } = counts(pairs);
  const pts = rocPoints(pairs);
  let best = pts[0]!;
  for (const p of pts) if (p.fp / N <= far + 1e-12) best = p;
  return point(P, N, best.threshold, best.tp, best.fp);
}

/** The threshold with the best accuracy: the middle one of the first run of best thresholds. */
export function bestAccuracy(pairs: ScoredPair[]): OperatingPoint {
  const { P, N } = counts(pairs);
  const pts = rocPoints(pairs);
  const right = (p: { tp: number; fp: number }) => p.tp + (N - p.fp);
  const best = Math.max(...pts.map(right));
  const first = pts.findIndex((p) => right(p) === best);
  let last = first;
  while (last + 1 < pts.length && right(pts[last + 1]!) === best) last++;
  const mid = pts[Math.floor((first + last) / 2)]!;
  return point(P, N, mid.threshold, mid.tp, mid.fp);
}

/** What a fixed threshold gives on the pairs. */
export function atThreshold(pairs: ScoredPair[], threshold: number): OperatingPoint {
  const { P, N } = counts(pairs);
  let tp = 0, fp = 0;
  for (const p of pairs) {
    if (p.distance === null || !(p.distance <= threshold)) continue;
    if (p.genuine) tp++;
    else fp++;
  }
  return point(P, N, threshold, tp, fp);
}

/** Area under the ROC curve (trapezoids over its steps; ties count one half). */
export function auc(pairs: ScoredPair[]): number {
  const { P, N } = counts(pairs);
  const pts = rocPoints(pairs);
  let a = 0;
  for (let i = 1; i < pts.length; i++) a += ((pts[i]!.fp - pts[i - 1]!.fp) / N) * ((pts[i - 1]!.tp + pts[i]!.tp) / 2 / P);
  return a;
}

export function calibrate(pairs: ScoredPair[], deepfaceThreshold: number, curvePoints = 48): MetricCalibration {
  const { P, N } = counts(pairs);
  return {
    far_1e_2: atFar(pairs, 1e-2),
    far_1e_3: atFar(pairs, 1e-3),
    best_accuracy: bestAccuracy(pairs),
    deepface: atThreshold(pairs, deepfaceThreshold),
    auc: Math.round(auc(pairs) * 1e6) / 1e6,
    curve: curve(rocPoints(pairs), P, N, curvePoints),
  };
}

/** About `n` points of the curve, spread evenly over log10(FAR) from 1/N to 1, plus its ends. */
function curve(pts: Array<{ tp: number; fp: number }>, P: number, N: number, n: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const lo = Math.log10(1 / N);
  let k = 0;
  for (let i = 0; i <= n; i++) {
    const far = 10 ** (lo + ((0 - lo) * i) / n);
    // The highest TAR with FAR at most `far`.
    while (k + 1 < pts.length && pts[k + 1]!.fp / N <= far + 1e-12) k++;
    const p = pts[k]!;
    const xy: [number, number] = [Number((p.fp / N).toPrecision(6)), Number((p.tp / P).toPrecision(6))];
    const prev = out[out.length - 1];
    if (!prev || prev[0] !== xy[0] || prev[1] !== xy[1]) out.push(xy);
  }
  return out;
}

/**
 * DeepFace's model "Dlib": dlib_face_recognition_resnet_model_v1, converted once from dlib's .dat
 * into ONNX by models/converters/dlib_to_onnx.py and run on ONNX Runtime.
 *
 * The network takes 150x150 RGB uint8 chips; the converted graph does dlib's own input scaling, so
 * callers hand over raw pixel values. The descriptor is returned as dlib computes it (not unit-norm).
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { OnnxSession } from './onnx-session.js';

export const DLIB_WEIGHTS = {
  file: 'dlib_face_recognition_resnet_model_v1.dat',
  url: 'http://dlib.net/files/dlib_face_recognition_resnet_model_v1.dat.bz2',
  size: 22_466_066,
  sha256: '55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30',
} as const;

export const DLIB_INPUT_SIZE = 150;
export const DLIB_EMBEDDING_SIZE = 128;
const CHIP_BYTES = DLIB_INPUT_SIZE * DLIB_INPUT_SIZE * 3;

export interface DlibConvertOptions {
  /** The .dat file (checked against DLIB_WEIGHTS.sha256 unless `expectedSha256` says otherwise). */
  weightsPath: string;
  /** Directory for converted models (git-ignored). */
  cacheDir: string;
  /** Python with numpy and onnx (the repository's .venv). */
  python: string;
  /** models/converters/dlib_to_onnx.py */
  converter: string;
  expectedSha256?: string;
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Returns the path of the converted model, converting on first use. The cache name carries the
 * hashes of both the weights and the converter, so a changed converter never serves a stale graph.
 */
export async function convertDlibModel(opts: DlibConvertOptions): Promise<string> {
  if (!existsSync(opts.weightsPath)) {
    throw new Error(`Dlib weights not found at ${opts.weightsPath} (expected ${DLIB_WEIGHTS.file}, from ${DLIB_WEIGHTS.url})`);
  }
  const weights = await readFile(opts.weightsPath);
  const digest = sha256(weights);
  const expected = opts.expectedSha256 ?? DLIB_WEIGHTS.sha256;
  if (digest !== expected) {
    throw new Error(`Dlib weights at ${opts.weightsPath} have sha256 ${digest}, expected ${expected}`);
  }
  const converterDigest = sha256(readFileSync(opts.converter));
  const prefix = 'dlib_resnet_v1-';
  const name = `${prefix}${digest.slice(0, 12)}-${converterDigest.slice(0, 12)}.onnx`;
  const target = join(opts.cacheDir, name);
  if (existsSync(target)) return target;
  await mkdir(opts.cacheDir, { recursive: true });
  await new Promise<void>((resolve, reject) => {
    execFile(opts.python, [opts.converter, opts.weightsPath, target], { maxBuffer: 1 << 20 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`Dlib conversion failed (${opts.python} ${opts.converter}): ${String(stderr).trim() || err.message}`));
      else resolve();
    });
  });
  // Graphs from older converter versions are never read again; 22 MB each adds up across edits.
  for (const entry of await readdir(opts.cacheDir)) {
    if (entry.startsWith(prefix) && entry.endsWith('.onnx') && entry !== name) {
      await rm(join(opts.cacheDir, entry), { force: true });
    }
  }
  return target;
}

/**
 * DeepFace's Dlib client hands dlib `uint8(img * 255)` of the BGR [0,1] letterboxed face, flipped to
 * RGB: truncation, not rounding, and no scaling when the input already exceeds 1. Matching that
 * keeps our descriptors equal to DeepFace's. `hwcBgr` is H*W*3 interleaved.
 */
export function deepfaceDlibPixels(hwcBgr: Float32Array): Uint8Array {
  let max = -Infinity;
  for (const v of hwcBgr) if (v > max) max = v;
  const scale = max <= 1 ? 255 : 1;
  const out = new Uint8Array(hwcBgr.length);
  for (let i = 0; i < hwcBgr.length; i += 3) {
    for (let c = 0; c < 3; c++) {
      // Math.trunc then & 0xff mirrors numpy's astype(uint8) for the values this path produces.
      out[i + c] = Math.trunc(Math.fround((hwcBgr[i + 2 - c] as number) * scale)) & 0xff;
    }
  }
  return out;
}

/** Packs RGB chips (150*150*3 bytes each, interleaved) into the model's NCHW float32 batch. */
export function chipsToBatch(chips: readonly Uint8Array[]): Float32Array {
  const plane = DLIB_INPUT_SIZE * DLIB_INPUT_SIZE;
  const batch = new Float32Array(chips.length * CHIP_BYTES);
  chips.forEach((chip, n) => {
    if (chip.length !== CHIP_BYTES) throw new RangeError(`chip ${n} has ${chip.length} bytes, expected ${CHIP_BYTES}`);
    const base = n * CHIP_BYTES;
    for (let i = 0; i < plane; i++) {
      batch[base + i] = chip[3 * i] as number;
      batch[base + plane + i] = chip[3 * i + 1] as number;
      batch[base + 2 * plane + i] = chip[3 * i + 2] as number;
    }
  });
  return batch;
}

export interface DlibModelOptions {
  modelPath: string;
  intraOpNumThreads: number;
  interOpNumThreads: number;
}

export class DlibModel {
  private constructor(private readonly session: OnnxSession) {}

  static async load(opts: DlibModelOptions): Promise<DlibModel> {
    const session = await OnnxSession.create({
      modelPath: opts.modelPath,
      inputName: 'input',
      outputName: 'embedding',
      sampleShape: [3, DLIB_INPUT_SIZE, DLIB_INPUT_SIZE],
      intraOpNumThreads: opts.intraOpNumThreads,
      interOpNumThreads: opts.interOpNumThreads,
    });
    return new DlibModel(session);
  }

  /** One 128-d descriptor per 150x150 RGB chip. */
  async embed(chips: readonly Uint8Array[]): Promise<Float32Array[]> {
    if (chips.length === 0) return [];
    return this.session.run(chipsToBatch(chips), chips.length);
  }

  close(): Promise<void> {
    return this.session.close();
  }
}

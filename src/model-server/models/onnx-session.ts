/**
 * A thin wrapper over an onnxruntime-node InferenceSession for models that map a batch of fixed-size
 * samples to one fixed-size vector each (every recognition model here). Session options come from
 * ort-options.ts, so thread counts are always the caller's (the model server owns the process-wide
 * budget) and every model gets the same deliberate settings. The session lives on the inference
 * thread (../inference/), so a run never blocks the JS thread.
 */
import { inferenceThread, type RemoteSession } from '../inference/inference-thread.js';
import { sessionOptions, type OrtSettings } from './ort-options.js';

export interface OnnxSessionOptions {
  /** Path of the .onnx file (a converted model in the cache). */
  modelPath: string;
  /** Graph input and output names. */
  inputName: string;
  outputName: string;
  /** Accept the single input/output of a graph whose names the manifest could not verify. */
  lenientNames?: boolean;
  /** Shape of one sample without the batch axis, e.g. [3, 150, 150]. */
  sampleShape: readonly number[];
  settings: OrtSettings;
}

export class OnnxSession {
  readonly inputName: string;
  readonly outputName: string;
  readonly sampleShape: readonly number[];
  /** Number of float32 values in one sample. */
  readonly sampleSize: number;
  private session: RemoteSession | null;

  private constructor(session: RemoteSession, opts: OnnxSessionOptions, sampleSize: number) {
    this.session = session;
    this.inputName = opts.inputName;
    this.outputName = opts.outputName;
    this.sampleShape = [...opts.sampleShape];
    this.sampleSize = sampleSize;
  }

  static async create(opts: OnnxSessionOptions): Promise<OnnxSession> {
    opts = { ...opts };
    const { intraOpThreads, interOpThreads } = opts.settings;
    // intra 0 means "one per physical core" (ONNX Runtime's choice); inter must be explicit.
    if (!Number.isInteger(intraOpThreads) || intraOpThreads < 0) throw new RangeError(`intraOpThreads must be an integer >= 0, got ${intraOpThreads}`);
    if (!Number.isInteger(interOpThreads) || interOpThreads < 1) throw new RangeError(`interOpThreads must be a positive integer, got ${interOpThreads}`);
    if (opts.sampleShape.length === 0 || !opts.sampleShape.every((d) => Number.isInteger(d) && d > 0)) {
      throw new RangeError(`sampleShape must be positive integers, got [${opts.sampleShape.join(', ')}]`);
    }
    const session = await inferenceThread().load(opts.modelPath, sessionOptions(opts.settings));
    // Where the manifest could not check the names against the real file (SFace), a graph with a
    // single input and output is used whatever its names.
    if (opts.lenientNames) {
      if (!session.inputNames.includes(opts.inputName) && session.inputNames.length === 1) opts = { ...opts, inputName: session.inputNames[0] as string };
      if (!session.outputNames.includes(opts.outputName) && session.outputNames.length === 1) opts = { ...opts, outputName: session.outputNames[0] as string };
    }
    if (!session.inputNames.includes(opts.inputName) || !session.outputNames.includes(opts.outputName)) {
      await session.release();
      throw new Error(
        `model ${opts.modelPath} has inputs [${session.inputNames.join(', ')}] and outputs ` +
          `[${session.outputNames.join(', ')}], expected ${opts.inputName} -> ${opts.outputName}`,
      );
    }
    const sampleSize = opts.sampleShape.reduce((a, b) => a * b, 1);
    return new OnnxSession(session, opts, sampleSize);
  }

  /**
   * Runs `n` samples laid out back to back in `batch` (n * sampleSize floats) and returns one output
   * row per sample. Rows are copies, so callers may keep them after later runs.
   */
  async run(batch: Float32Array, n: number): Promise<Float32Array[]> {
    const session = this.session;
    if (session === null) throw new Error('OnnxSession used after close()');
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`batch size must be a positive integer, got ${n}`);
    if (batch.length !== n * this.sampleSize) {
      throw new RangeError(`batch holds ${batch.length} floats, expected ${n} x ${this.sampleSize}`);
    }
    const outputs = await session.run({ [this.inputName]: { type: 'float32', data: batch, dims: [n, ...this.sampleShape] } });
    const out = outputs[this.outputName];
    if (out === undefined) throw new Error(`model produced no output named ${this.outputName}`);
    const data = out.data;
    if (out.dims[0] !== n || data.length % n !== 0) {
      throw new Error(`output ${this.outputName} has shape [${out.dims.join(', ')}] for a batch of ${n}`);
    }
    const width = data.length / n;
    const rows: Float32Array[] = [];
    // Views of the transferred output buffer, which nothing else holds.
    for (let i = 0; i < n; i++) rows.push(data.subarray(i * width, (i + 1) * width));
    return rows;
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = null;
    if (session !== null) await session.release();
  }
}

/**
 * A recognition model on ONNX Runtime, behind the micro-batcher: concurrent requests for the same
 * model share one session run.
 */
import type { ModelInput } from '../../models/manifest.js';
import { Batcher } from '../batcher.js';
import type { Recognizer } from '../engines.js';
import { OnnxSession } from './onnx-session.js';
import type { OrtSettings } from './ort-options.js';

export interface RecognizerSpec {
  name: string;
  dims: number;
  input: ModelInput;
  onnx: { input: string; output: string; dynamic_batch?: boolean; names_unverified?: boolean };
}

export class OrtRecognizer implements Recognizer {
  readonly name: string;
  readonly dims: number;
  readonly input: ModelInput;
  private readonly batcher: Batcher;

  private constructor(
    private readonly session: OnnxSession,
    private readonly spec: RecognizerSpec,
    batching: { windowMs: number; maxBatch: number },
  ) {
    this.name = spec.name;
    this.dims = spec.dims;
    this.input = spec.input;
    this.batcher = new Batcher((batch, rows) => this.runSession(batch, rows), session.sampleSize, batching.maxBatch, batching.windowMs);
  }

  static async load(path: string, spec: RecognizerSpec, settings: OrtSettings, batching: { windowMs: number; maxBatch: number }): Promise<OrtRecognizer> {
    const { width, height, layout } = spec.input;
    const session = await OnnxSession.create({
      modelPath: path,
      inputName: spec.onnx.input,
      outputName: spec.onnx.output,
      lenientNames: spec.onnx.names_unverified === true,
      sampleShape: layout === 'nchw' ? [3, height, width] : [height, width, 3],
      settings,
    });
    return new OrtRecognizer(session, spec, batching);
  }

  get batchStats() {
    return this.batcher.stats;
  }

  embed(batch: Float32Array, n: number): Promise<Float32Array[]> {
    return this.batcher.submit(batch, n);
  }

  private async runSession(batch: Float32Array, rows: number): Promise<Float32Array[]> {
    let out: Float32Array[];
    if (this.spec.onnx.dynamic_batch === false && rows > 1) {
      // A graph fixed at batch 1 takes its rows one run at a time.
      out = [];
      const size = batch.length / rows;
      for (let i = 0; i < rows; i++) out.push(...(await this.session.run(batch.subarray(i * size, (i + 1) * size), 1)));
    } else {
      out = await this.session.run(batch, rows);
    }
    const width = out[0]?.length;
    if (width !== this.dims) throw new Error(`model ${this.name} gives ${width}-d rows, expected ${this.dims}`);
    return out;
  }

  async close(): Promise<void> {
    await this.session.close();
  }
}

/**
 * A recognition model on ONNX Runtime, behind the micro-batcher: concurrent requests for the same
 * model share one session run.
 */
import * as ort from 'onnxruntime-node';
import type { ModelInput } from '../../models/manifest.js';
import { Batcher } from '../batcher.js';
import type { Recognizer } from '../ports.js';
import { sessionOptions, type OrtSettings } from './ort-options.js';

export interface RecognizerSpec {
  name: string;
  dims: number;
  input: ModelInput;
  onnx: { input: string; output: string };
}

export class OrtRecognizer implements Recognizer {
  readonly name: string;
  readonly dims: number;
  readonly input: ModelInput;
  private readonly batcher: Batcher;

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly spec: RecognizerSpec,
    batching: { windowMs: number; maxBatch: number },
  ) {
    this.name = spec.name;
    this.dims = spec.dims;
    this.input = spec.input;
    const rowSize = spec.input.width * spec.input.height * 3;
    this.batcher = new Batcher((batch, rows) => this.runSession(batch, rows), rowSize, batching.maxBatch, batching.windowMs);
  }

  static async load(path: string, spec: RecognizerSpec, settings: OrtSettings, batching: { windowMs: number; maxBatch: number }): Promise<OrtRecognizer> {
    const session = await ort.InferenceSession.create(path, sessionOptions(settings));
    return new OrtRecognizer(session, spec, batching);
  }

  get batchStats() {
    return this.batcher.stats;
  }

  embed(batch: Float32Array, n: number): Promise<Float32Array[]> {
    return this.batcher.submit(batch, n);
  }

  private async runSession(batch: Float32Array, rows: number): Promise<Float32Array[]> {
    const { width, height, layout } = this.spec.input;
    const dims = layout === 'nchw' ? [rows, 3, height, width] : [rows, height, width, 3];
    const feeds = { [this.spec.onnx.input]: new ort.Tensor('float32', batch, dims) };
    const out = await this.session.run(feeds);
    const tensor = out[this.spec.onnx.output];
    if (!tensor) throw new Error(`model ${this.name} gave no output ${this.spec.onnx.output}`);
    const data = tensor.data as Float32Array;
    if (data.length !== rows * this.dims) throw new Error(`model ${this.name} output has ${data.length} values for ${rows}×${this.dims}`);
    const rowsOut: Float32Array[] = [];
    for (let i = 0; i < rows; i++) rowsOut.push(data.slice(i * this.dims, (i + 1) * this.dims));
    return rowsOut;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

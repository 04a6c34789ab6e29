/**
 * Messages between the model server's JS thread and its inference thread (inference-worker.ts).
 * Plain data only: tensors travel as typed arrays (their buffers transferred, not copied) and
 * errors as name and message, since a worker cannot post an Error's prototype.
 */
import type { InferenceSession } from 'onnxruntime-node';

/** A float32 tensor without ONNX Runtime's wrapper, so the JS thread never loads ONNX Runtime. */
export interface TensorData {
  type: 'float32';
  data: Float32Array;
  dims: readonly number[];
}

export type Feeds = Record<string, TensorData>;

export type InferenceRequest =
  | { id: number; op: 'load'; modelPath: string; options: InferenceSession.SessionOptions }
  | { id: number; op: 'run'; session: number; feeds: Feeds }
  | { id: number; op: 'release'; session: number };

export interface LoadedSession {
  session: number;
  inputNames: string[];
  outputNames: string[];
}

export type InferenceReply =
  | { id: number; ok: true; value: LoadedSession | Feeds | null }
  | { id: number; ok: false; error: { name: string; message: string } };

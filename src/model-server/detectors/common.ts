/**
 * What the ONNX face detectors share: their sessions (with the recognizers' deliberate options,
 * ../models/ort-options.ts) and the tensors they hand to the native decoders.
 */
import { inferenceThread, type RemoteSession, type TensorData } from '../inference/inference-thread.js';
import { sessionOptions, type OrtSettings } from '../models/ort-options.js';
import type { NativeImage, NativeTensor } from '../../native/types.js';

export type { NativeImage };

/** The session lives on the inference thread, so a detector run never blocks the JS thread. */
export async function createSession(modelPath: string, settings: OrtSettings): Promise<RemoteSession> {
  return inferenceThread().load(modelPath, sessionOptions(settings));
}

export function toNative(t: TensorData): NativeTensor {
  return { data: t.data, dims: [...t.dims] };
}

/**
 * ONNX Runtime session options, chosen on purpose (bench/ort-settings measures each choice):
 * - intra-op threads: all cores by default — one request's convolutions use the whole machine, and
 *   micro-batching keeps the pool busy under load;
 * - inter-op threads 1 and sequential execution: these graphs are chains, nothing runs in parallel;
 * - graph optimization 'all': constant folding and conv+bn/activation fusions;
 * - the CPU memory arena on: it removes per-run allocations after the first run;
 * - idle intra-op threads sleep instead of spin-waiting: the model server shares its cores with the
 *   gateway, the native detectors' thread pool and other processes, and spinning threads take CPU
 *   from them (bench/results/ort-settings.json: about 10x lower p50 on a busy 2-core machine, a
 *   little slower on an idle one).
 */
import type { InferenceSession } from 'onnxruntime-node';

export interface OrtSettings {
  intraOpThreads: number;
  interOpThreads: number;
  provider: 'cpu' | 'cuda';
}

export function sessionOptions(s: OrtSettings): InferenceSession.SessionOptions {
  const opts: InferenceSession.SessionOptions = {
    interOpNumThreads: s.interOpThreads,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    enableCpuMemArena: true,
    enableMemPattern: true,
    extra: { session: { 'intra_op.allow_spinning': '0' } },
    executionProviders: s.provider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
  };
  // 0 lets ONNX Runtime use one thread per physical core.
  if (s.intraOpThreads > 0) opts.intraOpNumThreads = s.intraOpThreads;
  return opts;
}

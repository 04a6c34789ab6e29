/**
 * The inference thread: owns every ONNX Runtime session of the model server and runs them one at a
 * time. onnxruntime-node's `run` is synchronous on the thread that calls it (a setImmediate around
 * a blocking call), so on the JS thread every run stalled HTTP parsing, native-task completions and
 * /internal/readiness for its whole duration. Here it only stalls this thread, while the JS thread
 * keeps accepting requests and the micro-batcher fills the next batch. Runs stay sequential: ONNX
 * Runtime's own intra-op pool already spreads one run over the cores.
 */
import { parentPort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import type { Feeds, InferenceReply, InferenceRequest, LoadedSession } from './protocol.js';

const port = parentPort;
if (!port) throw new Error('inference-worker.ts runs as a worker thread (see inference-thread.ts)');

const sessions = new Map<number, ort.InferenceSession>();
let nextSession = 1;

async function handle(req: InferenceRequest): Promise<{ value: LoadedSession | Feeds | null; transfer: ArrayBuffer[] }> {
  switch (req.op) {
    case 'load': {
      const s = await ort.InferenceSession.create(req.modelPath, req.options);
      const id = nextSession++;
      sessions.set(id, s);
      return { value: { session: id, inputNames: [...s.inputNames], outputNames: [...s.outputNames] }, transfer: [] };
    }
    case 'run': {
      const s = sessions.get(req.session);
      if (!s) throw new Error(`inference session ${req.session} is not loaded (released?)`);
      const feeds: Record<string, ort.Tensor> = {};
      for (const [name, t] of Object.entries(req.feeds)) feeds[name] = new ort.Tensor('float32', t.data, [...t.dims]);
      const out = await s.run(feeds);
      const value: Feeds = {};
      const transfer: ArrayBuffer[] = [];
      for (const [name, t] of Object.entries(out)) {
        if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, expected float32`);
        // onnxruntime-node gives every output a fresh buffer of its own, so it is handed over as is;
        // a view into a larger buffer (not seen) would be copied first.
        const raw = t.data as Float32Array;
        const data = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength ? raw : raw.slice();
        value[name] = { type: 'float32', data, dims: t.dims.map(Number) };
        transfer.push(data.buffer as ArrayBuffer);
        t.dispose();
      }
      return { value, transfer };
    }
    case 'release': {
      const s = sessions.get(req.session);
      sessions.delete(req.session);
      if (s) await s.release();
      return { value: null, transfer: [] };
    }
  }
}

port.on('message', (req: InferenceRequest) => {
  handle(req).then(
    ({ value, transfer }) => port.postMessage({ id: req.id, ok: true, value } satisfies InferenceReply, transfer),
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      port.postMessage({ id: req.id, ok: false, error: { name: e.name, message: e.message } } satisfies InferenceReply);
    },
  );
});

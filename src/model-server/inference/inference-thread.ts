/**
 * The JS thread's handle on the inference thread (inference-worker.ts): one worker per process,
 * started by the first session load, holding every ONNX Runtime session. A `RemoteSession` has the
 * shape of ONNX Runtime's session (names, run, release) with plain tensors, so the JS thread never
 * loads ONNX Runtime itself.
 *
 * The worker is unreferenced while nothing is pending, so idle sessions never keep a process
 * alive. If it dies (it should not: every request's error is caught and answered), every pending and
 * later call fails with InferenceThreadError and the `onInferenceFailure` listeners hear of it (the
 * registry turns readiness to 503); its sessions are gone, so it is not restarted behind callers.
 * There is deliberately no terminate(): stopping a worker inside a native ONNX Runtime run aborts
 * the whole process, and an idle, unreferenced worker ends with it anyway.
 */
import { Worker } from 'node:worker_threads';
import type { InferenceSession } from 'onnxruntime-node';
import type { Feeds, InferenceReply, InferenceRequest, LoadedSession } from './protocol.js';

export type { Feeds, TensorData } from './protocol.js';

export class InferenceThreadError extends Error {
  override readonly name = 'InferenceThreadError';
}

// Omit over each member of the union (a plain Omit would merge them).
type Call = InferenceRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

function startWorker(): Worker {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // A checkout run through tsx: the worker needs tsx's loader as well, and a worker's execArgv
    // cannot carry --import, so it registers tsx itself before loading the worker module.
    const api = import.meta.resolve('tsx/esm/api');
    const target = new URL('./inference-worker.ts', here).href;
    return new Worker(`import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(target)}); })`, { eval: true });
  }
  // dist/src/model-server/inference/ (tsc) and dist/bundle/ (esbuild, see scripts/bundle.mjs) both
  // put the worker beside this module.
  return new Worker(new URL('./inference-worker.js', here));
}

export class InferenceThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failed: InferenceThreadError | null = null;

  /** `start` is for tests, which give it a worker that misbehaves; `onFailure` hears of its death once. */
  constructor(
    start: () => Worker = startWorker,
    private readonly onFailure: (err: InferenceThreadError) => void = () => undefined,
  ) {
    this.worker = start();
    this.worker.unref();
    this.worker.on('message', (r: InferenceReply) => this.settle(r));
    this.worker.on('error', (err) => this.fail(`inference thread failed: ${err.message}`));
    this.worker.on('exit', (code) => this.fail(`inference thread exited (code ${code})`));
  }

  get failure(): InferenceThreadError | null {
    return this.failed;
  }

  async load(modelPath: string, options: InferenceSession.SessionOptions): Promise<RemoteSession> {
    const loaded = (await this.call({ op: 'load', modelPath, options })) as LoadedSession;
    return new RemoteSession(this, loaded);
  }

  call(req: Call, transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Referenced while work is pending, so a process waiting on inference does not exit.
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ ...req, id } as InferenceRequest, transfer);
    });
  }

  private settle(r: InferenceReply): void {
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (this.pending.size === 0) this.worker.unref();
    if (r.ok) p.resolve(r.value);
    else {
      const err = new Error(r.error.message);
      err.name = r.error.name;
      p.reject(err);
    }
  }

  private fail(message: string): void {
    if (this.failed) return;
    this.failed = new InferenceThreadError(message);
    for (const p of this.pending.values()) p.reject(this.failed);
    this.pending.clear();
    this.worker.unref();
    this.onFailure(this.failed);
  }
}

export class RemoteSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  private released = false;

  constructor(
    private readonly thread: InferenceThread,
    private readonly loaded: LoadedSession,
  ) {
    this.inputNames = loaded.inputNames;
    this.outputNames = loaded.outputNames;
  }

  /** Inputs are copied once into buffers that are then handed to the worker, so callers keep theirs. */
  async run(feeds: Feeds): Promise<Feeds> {
    if (this.released) throw new Error('inference session used after release()');
    const owned: Feeds = {};
    const transfer: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      const data = new Float32Array(t.data);
      owned[name] = { type: 'float32', data, dims: [...t.dims] };
      transfer.push(data.buffer as ArrayBuffer);
    }
    return (await this.thread.call({ op: 'run', session: this.loaded.session, feeds: owned }, transfer)) as Feeds;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (!this.thread.failure) await this.thread.call({ op: 'release', session: this.loaded.session });
  }
}

let shared: InferenceThread | null = null;
const failureListeners = new Set<(err: InferenceThreadError) => void>();

/** The process's inference thread, started on first use. */
export function inferenceThread(): InferenceThread {
  shared ??= new InferenceThread(startWorker, (err) => {
    for (const listener of failureListeners) listener(err);
    failureListeners.clear();
  });
  return shared;
}

/** Calls `listener` once if the process's inference thread stops (at once if it already has). */
export function onInferenceFailure(listener: (err: InferenceThreadError) => void): void {
  if (shared?.failure) listener(shared.failure);
  else failureListeners.add(listener);
}

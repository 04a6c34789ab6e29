/**
 * Client of the internal model servers (src/model-client/protocol.ts), used by the gateway and the
 * MCP endpoint. Replicas come from FACECOMPUTE_MODEL_SERVER_URLS and/or FACECOMPUTE_MODEL_SERVER_DNS
 * (dns-discovery.ts) and are balanced by least outstanding requests with passive health
 * (replicas.ts); every request carries the internal token when one is configured.
 *
 * Retries: a request is sent once more, to another replica when there is one, only when no replica
 * consumed its frame (the connection was refused, never opened, or reset with the frame unread: the
 * replica is gone, restarting or dying) or a replica refused it before doing any work (503
 * service_warming, 401 on a token mismatch). A compute frame that a replica read whole and then closed
 * the connection on without an answer is `upstream_lost` and is not sent again: its input may be what
 * killed the replica, and a retry would kill a second one. Never after a timeout or a
 * partial answer.
 *
 * Failures map to the contract: connection errors and 5xx → upstream_failed (502), timeouts →
 * upstream_timeout (504), an answer over the cap → upstream_response_too_large (502). A 4xx ErrorBody
 * with a code the contract lets through (e.g. no_face_detected) is passed on; upstream bodies are
 * never copied into a detail otherwise. An answer that is not the protocol's (not JSON, or not the
 * shape of the route's result) is garbage: upstream_failed, and it counts against the replica like
 * a dead connection.
 */
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { ServiceError, isErrorCode, type ErrorCode } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import {
  FRAME_CONTENT_TYPE,
  INTERNAL_PATHS,
  INTERNAL_TOKEN_HEADER,
  encodeFrame,
  type CapabilitiesResponse,
  type EmbedHeader,
  type EmbedResponse,
  type RepresentHeader,
  type VerifyHeader,
  type ReadinessResponse,
  type RepresentResponse,
  type VerifyDistance,
} from './protocol.js';
import { ReplicaSet, type HealthOptions, type Replica, type ReplicaSnapshot } from './replicas.js';
import { systemResolver, watchDns, type DnsResolver, type DnsWatch } from './dns-discovery.js';
import { jobCost, type ImageDims } from './job-cost.js';
import { probeImage } from '../native/image.js';

/** Codes a model server may answer that reach the caller unchanged. */
const PASS_THROUGH: ReadonlySet<ErrorCode> = new Set([
  'invalid_request', 'unsupported_option', 'model_not_allowed', 'detector_not_allowed', 'invalid_image',
  'embedding_dimension_mismatch', 'invalid_embedding', 'too_many_pixels', 'image_too_large', 'no_face_detected',
  'service_warming', 'request_over_memory_budget', 'memory_budget_full',
]);

const SAFE_DETAIL = /^[\w\s.,:;'"()\-=<>[\]{}+*%!?#]{1,300}$/;

export interface UpstreamOptions {
  /** Static replicas (base URLs). */
  urls: string[];
  /** Replicas from a host name's A/AAAA records. */
  dns?: { url: string; intervalMs: number; servers?: string[]; resolver?: DnsResolver } | null;
  /** Sent on every request (FACECOMPUTE_INTERNAL_TOKEN); '' or absent sends none. */
  internalToken?: string;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Connections per replica. */
  connections?: number;
  health?: Partial<HealthOptions>;
  /** Timeout of the readiness probe of an ejected replica. */
  probeTimeoutMs?: number;
  onError?: (kind: string) => void;
  logger?: Logger;
}

export interface UpstreamCallContext {
  requestId: string;
  signal?: AbortSignal;
}

export interface Upstream {
  readiness(ctx: UpstreamCallContext): Promise<{ status: number; body: ReadinessResponse }>;
  capabilities(ctx: UpstreamCallContext): Promise<CapabilitiesResponse>;
  verify(h: VerifyHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<VerifyDistance>;
  represent(h: RepresentHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<RepresentResponse>;
  embed(h: EmbedHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<EmbedResponse>;
  /** The replicas and their state (metrics, tests). */
  replicas?(): ReplicaSnapshot[];
  close(): Promise<void>;
}

function isTimeout(err: unknown): boolean {
  return (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    (err instanceof Error && (err.name === 'TimeoutError' || (err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' || (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT'))
  );
}

/**
 * Errors that say the replica's process never consumed the whole frame, so nothing computed it:
 * - raised before a connection existed: the address refused or could not be reached, or the
 *   connection did not open in time;
 * - a reset (RST) instead of a close: Linux resets a connection whose received bytes its process
 *   had not all read when it closed, and every connection still waiting in the listen queue of a
 *   process that dies (it accepts them while it is being torn down). A model server reads a whole
 *   frame before it decodes anything, and a frame has a connection of its own (Connections), so a
 *   process killed by its input has read that input: it closes (FIN, undici's "other side closed"),
 *   it does not reset.
 */
const FRAME_NOT_CONSUMED: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT', 'ECONNRESET', 'EPIPE']);

function frameNotConsumed(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof undiciErrors.ConnectTimeoutError || (typeof code === 'string' && FRAME_NOT_CONSUMED.has(code));
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The minimal shape of each route's success: enough to tell an answer from garbage. */
const SHAPES: Record<string, (v: unknown) => boolean> = {
  [INTERNAL_PATHS.readiness]: (v) => isObj(v) && typeof v['status'] === 'string' && typeof v['ready'] === 'boolean',
  [INTERNAL_PATHS.capabilities]: (v) => isObj(v) && Array.isArray(v['allowed_models']) && typeof v['default_model'] === 'string' && isObj(v['embedding_dims']),
  [INTERNAL_PATHS.verify]: (v) => isObj(v) && typeof v['distance'] === 'number' && isObj(v['facial_areas']),
  [INTERNAL_PATHS.represent]: (v) => isObj(v) && Array.isArray(v['results']) && v['results'].every((r) => Array.isArray(r)),
  [INTERNAL_PATHS.embed]: (v) => isObj(v) && Array.isArray(v['embedding']) && isObj(v['facial_area']),
};

/**
 * How one attempt on one replica ended, when it did not end in an answer for the caller:
 * `retry` says whether the request may be sent again (nothing was computed), `blame` whether it
 * counts against the replica's health ('failure'), takes it out until ready ('not_ready'), or not.
 */
class AttemptError extends Error {
  constructor(
    readonly error: ServiceError,
    readonly kind: string,
    readonly retry: 'another' | 'any' | 'no',
    readonly blame: 'failure' | 'not_ready' | 'none',
  ) {
    super(error.message);
  }
}

/**
 * A replica's two pools. `probes` keeps connections alive for readiness and capabilities. `frames`
 * carries compute frames, each on a connection of its own, closed after the answer: on a reused
 * keep-alive connection, a replica that had died a moment before (its close not yet seen here) would
 * look as if it had died of the frame written to it, which is then upstream_lost, charged and struck.
 * On a new connection a dead replica refuses the connect, and the frame goes elsewhere. One loopback
 * or in-cluster handshake per inference is noise beside the inference.
 */
interface Connections {
  probes: Pool;
  frames: Pool;
}

interface Answer {
  status: number;
  json: unknown;
}

/**
 * A compute frame in flight on a replica, with its estimated peak bytes (job-cost.ts). When the
 * replica dies, the frames it was computing form one `Loss`: only the largest job is presumed to
 * have killed it and is upstream_lost (charged, a strike); the others are bystanders, sent again
 * elsewhere when a replica is left, refunded otherwise.
 */
interface Job {
  cost: number;
  loss?: Loss;
}

interface Loss {
  largest: number;
  blamed: boolean;
}

/** The frame's estimated peak bytes; 0 when an image's header cannot be read (the server refuses it). */
function frameCost(h: VerifyHeader | RepresentHeader | EmbedHeader, images: Buffer[]): number {
  try {
    const dims: ImageDims[] = images.map((b) => probeImage(b));
    return jobCost(h, dims, { detectorMaxSide: 0 }).concurrent;
  } catch {
    return 0;
  }
}

export function createUpstream(opts: UpstreamOptions): Upstream {
  const note = (k: string) => opts.onError?.(k);
  const log = opts.logger;
  const baseHeaders: Record<string, string> = { accept: 'application/json', ...(opts.internalToken ? { [INTERNAL_TOKEN_HEADER]: opts.internalToken } : {}) };
  const probeTimeoutMs = opts.probeTimeoutMs ?? 2000;
  let warnedToken = false;

  const set: ReplicaSet<Connections> = new ReplicaSet<Connections>({
    ...(opts.health ? { health: opts.health } : {}),
    ...(log ? { logger: log } : {}),
    connect: (origin) => {
      const pool = (keepAliveTimeout?: number) =>
        new Pool(origin, { connections: opts.connections ?? 16, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs, ...(keepAliveTimeout ? { keepAliveTimeout } : {}) });
      return { probes: pool(4000), frames: pool() };
    },
    disconnect: async (c) => {
      await Promise.all([c.probes.close(), c.frames.close()]);
    },
    probe: async (r) => {
      try {
        const a = await attempt(r, 'GET', INTERNAL_PATHS.readiness, undefined, { requestId: 'probe', signal: AbortSignal.timeout(probeTimeoutMs) }, [200, 503]);
        return a.status === 200 && (a.json as ReadinessResponse).ready === true;
      } catch {
        return false;
      }
    },
  });
  if (opts.urls.length > 0) set.update('urls', opts.urls.map((u) => new URL(u).origin));
  let dns: DnsWatch | null = null;
  if (opts.dns) {
    dns = watchDns({
      url: opts.dns.url,
      intervalMs: opts.dns.intervalMs,
      resolver: opts.dns.resolver ?? systemResolver(opts.dns.servers ?? [], Math.min(2000, opts.dns.intervalMs)),
      onChange: (origins) => set.update('dns', origins),
      ...(log ? { logger: log } : {}),
    });
  }
  /** The first DNS lookup decides the first replicas: requests that arrive before it wait for it. */
  const discovered = dns ? dns.first : Promise.resolve();

  /** The compute frames in flight on each replica (Job). */
  const running = new WeakMap<Replica<Connections>, Set<Job>>();

  /** Whether `job`, lost with its replica, is the largest job the replica was running then. */
  function isLargestLost(r: Replica<Connections>, job: Job): boolean {
    if (!job.loss) {
      // The first loss reported on this replica: every frame in flight on it died together.
      const jobs = [...(running.get(r) ?? [])].filter((j) => !j.loss);
      const loss: Loss = { largest: Math.max(job.cost, ...jobs.map((j) => j.cost)), blamed: false };
      for (const j of jobs) j.loss = loss;
      job.loss = loss;
    }
    if (job.loss.blamed || job.cost < job.loss.largest) return false;
    job.loss.blamed = true;
    return true;
  }

  /** One request to one replica: its answer, or an AttemptError saying what failed. */
  async function attempt(r: Replica<Connections>, method: 'GET' | 'POST', path: string, body: Buffer | undefined, ctx: UpstreamCallContext, okStatuses: number[], cost = 0): Promise<Answer> {
    const job: Job | null = body !== undefined ? { cost } : null;
    if (job) {
      let jobs = running.get(r);
      if (!jobs) running.set(r, (jobs = new Set()));
      jobs.add(job);
    }
    try {
      return await attemptOn(r, method, path, body, ctx, okStatuses, job);
    } finally {
      if (job) running.get(r)?.delete(job);
    }
  }

  async function attemptOn(r: Replica<Connections>, method: 'GET' | 'POST', path: string, body: Buffer | undefined, ctx: UpstreamCallContext, okStatuses: number[], job: Job | null): Promise<Answer> {
    const signal = ctx.signal;
    let res: Dispatcher.ResponseData;
    r.requests++;
    try {
      res = await (body !== undefined ? r.conn.frames : r.conn.probes).request({
        method,
        path,
        body,
        // Every frame is sent with Connection: close (see Connections), so no socket of the frames
        // pool is ever reused.
        ...(body !== undefined ? { reset: true } : {}),
        ...(signal ? { signal } : {}),
        headers: { ...baseHeaders, 'x-request-id': ctx.requestId, ...(body ? { 'content-type': FRAME_CONTENT_TYPE } : {}) },
      });
    } catch (err) {
      if (signal?.aborted) {
        // The caller's deadline or departure: says nothing about the replica.
        const timedOut = (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError';
        throw new AttemptError(
          timedOut ? new ServiceError('upstream_timeout', 'the model server did not answer in time', { cause: err }) : new ServiceError('upstream_failed', 'the request was abandoned', { cause: err }),
          timedOut ? 'timeout' : 'aborted',
          'no',
          'none',
        );
      }
      if (isTimeout(err)) throw new AttemptError(new ServiceError('upstream_timeout', 'the model server did not answer in time', { cause: err }), 'timeout', 'no', 'failure');
      if (err instanceof undiciErrors.HTTPParserError) {
        throw new AttemptError(new ServiceError('upstream_failed', 'the model server sent a malformed answer', { cause: err }), 'malformed', 'no', 'failure');
      }
      // A frame the replica read whole, whose connection it then closed without an answer, is never
      // sent again: if its input is what killed the replica, another replica would die of it too
      // It is upstream_lost, which keeps the call charged and counts a strike against
      // the account (src/accounts/charging.ts, src/service/limits/strikes.ts).
      // Of the frames a dying replica was computing, only the largest job is presumed the cause.
      if (body !== undefined && !frameNotConsumed(err)) {
        if (job && !isLargestLost(r, job)) {
          throw new AttemptError(new ServiceError('upstream_failed', 'the model server stopped while computing another, larger request', { cause: err }), 'bystander', 'another', 'failure');
        }
        throw new AttemptError(new ServiceError('upstream_lost', 'the model server stopped while computing this request; it is not sent again', { cause: err }), 'lost', 'no', 'failure');
      }
      // The frame was not consumed (no connection, or a reset), or the request carries none
      // (readiness, capabilities): another replica may take it.
      throw new AttemptError(new ServiceError('upstream_failed', 'the model server could not be reached', { cause: err }), 'connect', 'any', 'failure');
    }
    res.body.on('error', () => undefined);
    const declared = Number(res.headers['content-length'] ?? NaN);
    const tooLarge = () => new AttemptError(new ServiceError('upstream_response_too_large', `the model server answered more than ${opts.maxResponseBytes} bytes`), 'too_large', 'no', 'failure');
    if (Number.isFinite(declared) && declared > opts.maxResponseBytes) {
      res.body.destroy();
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const c of res.body) {
        total += (c as Buffer).length;
        if (total > opts.maxResponseBytes) {
          res.body.destroy();
          throw tooLarge();
        }
        chunks.push(c as Buffer);
      }
    } catch (err) {
      if (err instanceof AttemptError) throw err;
      if (signal?.aborted) throw new AttemptError(new ServiceError('upstream_failed', 'the request was abandoned', { cause: err }), 'aborted', 'no', 'none');
      if (isTimeout(err)) throw new AttemptError(new ServiceError('upstream_timeout', 'the model server did not answer in time', { cause: err }), 'timeout', 'no', 'failure');
      throw new AttemptError(new ServiceError('upstream_failed', 'the model server connection failed mid-response', { cause: err }), 'body', 'no', 'failure');
    }
    const garbage = (cause?: unknown) =>
      new AttemptError(new ServiceError('upstream_failed', 'the model server sent a malformed answer', cause === undefined ? {} : { cause }), 'malformed', 'no', 'failure');
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(chunks, total).toString('utf8'));
    } catch (err) {
      throw garbage(err);
    }
    const status = res.statusCode;
    if (okStatuses.includes(status)) {
      const shape = SHAPES[path];
      if (shape && !shape(json)) throw garbage();
      return { status, json };
    }
    const e = isObj(json) ? json : {};
    const code = e['error'];
    if (status === 401) {
      if (!warnedToken) log?.error({ replica: r.origin }, 'a model server refused the internal token: FACECOMPUTE_INTERNAL_TOKEN must be the same on the gateway, the MCP endpoint and every model server');
      warnedToken = true;
      throw new AttemptError(new ServiceError('upstream_failed', 'the model server refused this gateway (internal token)'), 'status_401', 'another', 'failure');
    }
    if (isErrorCode(code) && PASS_THROUGH.has(code) && ((status >= 400 && status < 500) || status === 503)) {
      const d = e['detail'];
      const detail = typeof d === 'string' && SAFE_DETAIL.test(d) && !d.includes('Traceback') ? d : code.replace(/_/g, ' ');
      const headers: Record<string, string> = {};
      if (code === 'service_warming') {
        headers['retry-after'] = String(res.headers['retry-after'] ?? '5');
        throw new AttemptError(new ServiceError(code, detail, { headers }), 'warming', 'another', 'not_ready');
      }
      if (code === 'memory_budget_full') {
        // Busy, not broken: another replica may have room.
        headers['retry-after'] = String(res.headers['retry-after'] ?? '1');
        throw new AttemptError(new ServiceError(code, detail, { headers }), 'memory_full', 'another', 'none');
      }
      // A sane refusal of the request itself: the replica is fine.
      set.succeeded(r);
      throw new AttemptError(new ServiceError(code, detail, { headers }), 'passed', 'no', 'none');
    }
    // A 5xx, or a status that is not the protocol's (e.g. 404 from something else on that port).
    const blame = status >= 500 || status === 404 ? 'failure' : 'none';
    throw new AttemptError(new ServiceError('upstream_failed', `the model server failed (HTTP ${status})`), `status_${status}`, 'no', blame);
  }

  /** Counts an attempt's failure against its replica, as the attempt says. */
  function account(r: Replica<Connections>, err: AttemptError): void {
    if (err.blame === 'failure') set.failed(r, err.kind);
    else if (err.blame === 'not_ready') set.notReady(r, 'answered service_warming');
    if (err.kind !== 'passed' && err.kind !== 'aborted') note(err.kind);
  }

  const noReplica = () => new ServiceError('upstream_failed', 'no model server replica is known');

  /** Runs a request on the best replica, and once more when `attempt` says it may. */
  async function call(method: 'GET' | 'POST', path: string, body: Buffer | undefined, ctx: UpstreamCallContext, okStatuses: number[] = [200], cost = 0): Promise<Answer> {
    await discovered;
    let previous: { replica: Replica<Connections>; err: AttemptError } | null = null;
    for (;;) {
      // The retry goes to another replica; after a connection failure, to the same one when it is
      // the only one (a keep-alive socket the server had just closed).
      const r: Replica<Connections> | null = previous ? (set.pick(previous.replica) ?? (previous.err.retry === 'any' && !previous.replica.removed ? previous.replica : null)) : set.pick();
      if (!r) throw previous?.err.error ?? noReplica();
      r.outstanding++;
      try {
        const a = await attempt(r, method, path, body, ctx, okStatuses, cost);
        set.succeeded(r);
        return a;
      } catch (err) {
        if (!(err instanceof AttemptError)) throw err;
        account(r, err);
        if (previous || err.retry === 'no' || ctx.signal?.aborted) throw err.error;
        previous = { replica: r, err };
      } finally {
        r.outstanding--;
      }
    }
  }

  async function compute<T>(path: string, h: VerifyHeader | RepresentHeader | EmbedHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<T> {
    return (await call('POST', path, encodeFrame(h, images), ctx, [200], frameCost(h, images))).json as T;
  }

  return {
    /**
     * Ready when any replica is: the up replicas are asked at once and the first ready answer wins,
     * so one frozen replica cannot hold the answer. Replicas that say they are warming are taken out
     * of rotation; an ejected one that answers ready is readmitted.
     */
    async readiness(ctx) {
      await discovered;
      const replicas = set.candidates();
      if (replicas.length === 0) throw noReplica();
      return new Promise((resolve, reject) => {
        let pending = replicas.length;
        let notReady: { status: number; body: ReadinessResponse } | null = null;
        let firstError: ServiceError | null = null;
        for (const r of replicas) {
          r.outstanding++;
          attempt(r, 'GET', INTERNAL_PATHS.readiness, undefined, ctx, [200, 503])
            .then((a) => {
              const body = a.json as ReadinessResponse;
              if (a.status === 200 && body.ready) {
                set.readmit(r);
                resolve({ status: 200, body });
              } else {
                set.notReady(r, `readiness ${body.status}`);
                notReady ??= { status: 503, body };
              }
            })
            .catch((err: unknown) => {
              if (err instanceof AttemptError) {
                if (err.blame === 'failure') set.failed(r, err.kind);
                firstError ??= err.error;
              } else firstError ??= new ServiceError('upstream_failed', 'the model server could not be reached', { cause: err });
            })
            .finally(() => {
              r.outstanding--;
              if (--pending > 0) return;
              if (notReady) resolve(notReady);
              else reject(firstError ?? noReplica());
            });
        }
      });
    },
    async capabilities(ctx) {
      return (await call('GET', INTERNAL_PATHS.capabilities, undefined, ctx)).json as CapabilitiesResponse;
    },
    verify: (h, images, ctx) => compute<VerifyDistance>(INTERNAL_PATHS.verify, h, images, ctx),
    represent: (h, images, ctx) => compute<RepresentResponse>(INTERNAL_PATHS.represent, h, images, ctx),
    embed: (h, images, ctx) => compute<EmbedResponse>(INTERNAL_PATHS.embed, h, images, ctx),
    replicas: () => set.snapshot(),
    async close() {
      dns?.stop();
      await set.close();
    },
  };
}

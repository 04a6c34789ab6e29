/**
 * An Upstream that knows its model server is a supervised child (`facecompute serve`): while the
 * child is being restarted, compute answers `503 service_warming` with an honest `Retry-After`
 * instead of `502 upstream_failed`, and readiness says `warming` (or `error`
 * `model_server_crashloop`) without asking a process that is not there.
 *
 * A call that fails at the transport level is checked against the supervisor: when the child died
 * meanwhile (its exit may be reported a moment after the socket closes, hence the short wait), the
 * failure is the restart's, not the request's.
 */
import { ServiceError, isServiceError } from '../errors/index.js';
import type { ReadinessResponse } from './protocol.js';
import type { Upstream, UpstreamCallContext } from './client.js';

/** The supervisor as the gateway sees it (src/cli/supervisor.ts implements it). */
export interface UpstreamSupervision {
  status(): {
    phase: 'starting' | 'up' | 'restarting' | 'crashloop' | 'failed' | 'stopped';
    generation: number;
    childAlive: boolean;
    retryAfterS: number;
  };
  waitForExit(generation: number, ms: number): Promise<void>;
}

/** How long a transport failure waits for the child's exit to be reported. */
const EXIT_SETTLE_MS = 150;

type Status = ReturnType<UpstreamSupervision['status']>;

function readinessBody(status: ReadinessResponse['status'], error: string): ReadinessResponse {
  return { status, ready: false, warming: status === 'warming', warmed_models: [], warmed_detectors: [], error };
}

/** The readiness a supervisor phase implies without asking the child, or null to ask it. */
function readinessOf(s: Status): ReadinessResponse | null {
  switch (s.phase) {
    case 'restarting':
      return s.childAlive ? null : readinessBody('warming', '');
    case 'crashloop':
      return readinessBody('error', 'model_server_crashloop');
    case 'failed':
      return readinessBody('error', 'model_server_failed');
    case 'stopped':
      return readinessBody('error', 'model_server_stopped');
    default:
      return null;
  }
}

function warming(s: Status): ServiceError {
  const detail =
    s.phase === 'crashloop'
      ? `the model server keeps crashing and is being restarted (model_server_crashloop); retry in ${s.retryAfterS} s`
      : s.phase === 'starting'
        ? `the model server is starting; retry in ${s.retryAfterS} s`
        : `the model server is restarting after a crash; retry in ${s.retryAfterS} s`;
  return new ServiceError('service_warming', detail, { headers: { 'retry-after': String(s.retryAfterS) } });
}

const restarting = (s: Status) => s.phase === 'restarting' || s.phase === 'crashloop' || s.phase === 'starting';

export function superviseUpstream(inner: Upstream, sup: UpstreamSupervision): Upstream {
  /** Runs one call; a restart known before or learnt from its failure becomes service_warming. */
  async function guarded<T>(call: () => Promise<T>): Promise<T> {
    const before = sup.status();
    if (restarting(before) && !before.childAlive) throw warming(before);
    try {
      return await call();
    } catch (err) {
      // Only a transport failure (no HTTP answer, so a cause) can be the crash's doing.
      if (!isServiceError(err) || err.code !== 'upstream_failed' || err.cause === undefined) throw err;
      await sup.waitForExit(before.generation, EXIT_SETTLE_MS);
      const after = sup.status();
      if (after.generation !== before.generation || restarting(after)) throw warming(after);
      throw err;
    }
  }

  return {
    async readiness(ctx: UpstreamCallContext) {
      const before = sup.status();
      const known = readinessOf(before);
      if (known) return { status: 503, body: known };
      try {
        return await inner.readiness(ctx);
      } catch (err) {
        // Out of time (a frozen child) is the caller's to report; a refused or reset connection
        // may be a crash whose exit is reported a moment later.
        if (ctx.signal?.aborted) throw err;
        await sup.waitForExit(before.generation, EXIT_SETTLE_MS);
        const s = sup.status();
        const now = readinessOf(s) ?? (restarting(s) || s.generation !== before.generation ? readinessBody('warming', '') : null);
        if (now) return { status: 503, body: now };
        throw err;
      }
    },
    capabilities: (ctx) => guarded(() => inner.capabilities(ctx)),
    verify: (h, images, ctx) => guarded(() => inner.verify(h, images, ctx)),
    represent: (h, images, ctx) => guarded(() => inner.represent(h, images, ctx)),
    embed: (h, images, ctx) => guarded(() => inner.embed(h, images, ctx)),
    close: () => inner.close(),
  };
}

/**
 * The gateway's view of a supervised model server (src/model-client/supervised.ts): a restart
 * known before a call, or learnt from its transport failure, is `503 service_warming` with
 * Retry-After; readiness says warming or model_server_crashloop without asking a dead child; other
 * failures pass through unchanged.
 */
import t from 'tap';
import { ServiceError } from '../src/errors/index.js';
import { superviseUpstream, type UpstreamSupervision } from '../src/model-client/supervised.js';
import type { Upstream } from '../src/model-client/client.js';
import type { VerifyHeader } from '../src/model-client/protocol.js';

type Status = ReturnType<UpstreamSupervision['status']>;

function fakeSupervision(initial: Partial<Status>) {
  let s: Status = { phase: 'up', generation: 0, childAlive: true, retryAfterS: 2, ...initial };
  const waits: Array<() => void> = [];
  return {
    sup: {
      status: () => s,
      waitForExit: (gen: number, ms: number) =>
        new Promise<void>((resolve) => {
          if (s.generation !== gen) return resolve();
          const timer = setTimeout(resolve, ms);
          waits.push(() => {
            clearTimeout(timer);
            resolve();
          });
        }),
    } satisfies UpstreamSupervision,
    set(next: Partial<Status>) {
      s = { ...s, ...next };
      waits.splice(0).forEach((w) => w());
    },
  };
}

function fakeUpstream(behaviour: () => Promise<unknown>): Upstream & { calls: number } {
  const u = {
    calls: 0,
    readiness: async () => {
      u.calls++;
      return (await behaviour()) as never;
    },
    capabilities: async () => {
      u.calls++;
      return (await behaviour()) as never;
    },
    verify: async () => {
      u.calls++;
      return (await behaviour()) as never;
    },
    represent: async () => {
      u.calls++;
      return (await behaviour()) as never;
    },
    embed: async () => {
      u.calls++;
      return (await behaviour()) as never;
    },
    close: async () => undefined,
  };
  return u;
}

const H = {} as VerifyHeader;
const CTX = { requestId: 'r' };
const refused = (cause: unknown) => new ServiceError('upstream_failed', 'the model server could not be reached', { cause });

t.test('during a backoff compute is service_warming at once, with Retry-After', async (t) => {
  const f = fakeSupervision({ phase: 'restarting', childAlive: false, retryAfterS: 3 });
  const inner = fakeUpstream(async () => ({ ok: true }));
  const u = superviseUpstream(inner, f.sup);
  const e = (await u.verify(H, [], CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e.code, 'service_warming');
  t.equal(e.status, 503);
  t.equal(e.headers['retry-after'], '3');
  t.match(e.detail, /restarting after a crash/);
  t.equal(inner.calls, 0, 'the dead child is not asked');
  const r = await u.readiness(CTX);
  t.equal(r.status, 503);
  t.equal(r.body.status, 'warming');
  t.equal(r.body.warming, true);
  t.equal(r.body.error, '');
});

t.test('a crash during the call turns its transport failure into service_warming', async (t) => {
  const f = fakeSupervision({ phase: 'up' });
  const inner = fakeUpstream(async () => {
    // The socket closes a moment before the exit is reported.
    setTimeout(() => f.set({ phase: 'restarting', generation: 1, childAlive: false, retryAfterS: 4 }), 20);
    throw refused(new Error('ECONNRESET'));
  });
  const e = (await superviseUpstream(inner, f.sup).represent({} as never, [], CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e.code, 'service_warming');
  t.equal(e.headers['retry-after'], '4');
});

t.test('readiness asked at the moment of a crash says warming, not unreachable', async (t) => {
  const f = fakeSupervision({ phase: 'up' });
  const inner = fakeUpstream(async () => {
    setTimeout(() => f.set({ phase: 'restarting', generation: 1, childAlive: false }), 20);
    throw refused(new Error('ECONNREFUSED'));
  });
  const r = await superviseUpstream(inner, f.sup).readiness(CTX);
  t.equal(r.status, 503);
  t.equal(r.body.status, 'warming');
  // Out of time (the caller's deadline fired): not the supervisor's to answer.
  const frozen = fakeUpstream(async () => { throw new ServiceError('upstream_timeout', 'late'); });
  const e = await superviseUpstream(frozen, fakeSupervision({ phase: 'up' }).sup).readiness({ requestId: 'r', signal: AbortSignal.abort() }).catch((x: unknown) => x);
  t.equal((e as ServiceError).code, 'upstream_timeout');
});

t.test('other failures pass through', async (t) => {
  const f = fakeSupervision({ phase: 'up' });
  const http500 = new ServiceError('upstream_failed', 'the model server failed (HTTP 500)');
  let e = (await superviseUpstream(fakeUpstream(async () => { throw http500; }), f.sup).verify(H, [], CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e, http500, 'an HTTP answer is not a crash');
  e = (await superviseUpstream(fakeUpstream(async () => { throw refused(new Error('ECONNREFUSED')); }), f.sup).verify(H, [], CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e.code, 'upstream_failed', 'a refused connection with the child up and no exit stays 502');
  const face = new ServiceError('no_face_detected', 'no face');
  e = (await superviseUpstream(fakeUpstream(async () => { throw face; }), f.sup).verify(H, [], CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e, face);
});

t.test('a first start: a child not yet listening is warming, not 502', async (t) => {
  const f = fakeSupervision({ phase: 'starting', childAlive: true, retryAfterS: 1 });
  const inner = fakeUpstream(async () => { throw refused(new Error('ECONNREFUSED')); });
  const u = superviseUpstream(inner, f.sup);
  const e = (await u.capabilities(CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e.code, 'service_warming');
  t.match(e.detail, /starting/);
  const r = await u.readiness(CTX);
  t.equal(r.body.status, 'warming');
});

t.test('crash loop and failure are readiness errors with symbolic codes', async (t) => {
  const inner = fakeUpstream(async () => ({ status: 200, body: {} }));
  let f = fakeSupervision({ phase: 'crashloop', childAlive: false, retryAfterS: 10 });
  let r = await superviseUpstream(inner, f.sup).readiness(CTX);
  t.equal(r.status, 503);
  t.equal(r.body.status, 'error');
  t.equal(r.body.error, 'model_server_crashloop');
  const e = (await superviseUpstream(inner, f.sup).verify(H, [], CTX).catch((x: unknown) => x)) as ServiceError;
  t.equal(e.code, 'service_warming');
  t.match(e.detail, /model_server_crashloop/);
  t.equal(e.headers['retry-after'], '10');
  f = fakeSupervision({ phase: 'failed', childAlive: false });
  r = await superviseUpstream(inner, f.sup).readiness(CTX);
  t.equal(r.body.error, 'model_server_failed');
  t.equal(inner.calls, 0);
});

t.test('when up, readiness is the child\'s own', async (t) => {
  const body = { status: 'ready', ready: true, warming: false, warmed_models: ['Dlib'], warmed_detectors: [], error: '' };
  const u = superviseUpstream(fakeUpstream(async () => ({ status: 200, body })), fakeSupervision({ phase: 'up' }).sup);
  t.same(await u.readiness(CTX), { status: 200, body });
});

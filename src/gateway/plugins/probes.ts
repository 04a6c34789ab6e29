/**
 * The gateway's open routes, one plugin: /health, /readiness (for load balancers) and /capabilities
 * (what this deployment serves). No key needed: their config does not say `keyed`, so the keyed
 * door (src/service/lifecycle/door.ts) lets them through.
 */
import type { FastifyPluginAsync } from 'fastify';
import * as S from '../../vocabulary/schemas.js';
import type { ComputeService } from '../../service/compute-service.js';
import type { Limiter } from '../../service/limits/limiter.js';
import type { Upstream } from '../../model-client/client.js';

export interface ProbesOptions {
  version: string;
  compute: ComputeService;
  limiter: Limiter;
  upstream: Upstream;
  /** FACECOMPUTE_READINESS_TIMEOUT_MS and FACECOMPUTE_READINESS_CACHE_MS. */
  readinessTimeoutMs: number;
  readinessCacheMs: number;
}

type Readiness = { status: number; body: Record<string, unknown> };

// `degraded` (a configured default the model server cannot serve, FACECOMPUTE_ALLOW_DEGRADED_START):
// one boolean a load balancer or an operator can alert on; the reasons stay on /capabilities.
// `unavailable`, `fetch_command` and `detector_fallback_unavailable`: what is allowed but not installed
// (the contract's pre-warmed fallback among it), and the command that fetches it.
const LB_FIELDS = ['status', 'ready', 'warming', 'warmed_models', 'warmed_detectors', 'error', 'warmed_at', 'degraded', 'unavailable', 'fetch_command', 'detector_fallback_unavailable'] as const;

export const probes: FastifyPluginAsync<ProbesOptions> = async (app, o) => {
  app.get('/health', { config: { whileDraining: true }, schema: { response: { 200: S.healthResponse } } }, async () => ({ status: 'ok', version: o.version }));

  // Readiness answers within FACECOMPUTE_READINESS_TIMEOUT_MS whatever its dependencies do: a frozen
  // model server (kill -STOP) or Redis is a 503 once that time has passed, not a hang for the upstream
  // timeout. Both checks run at once, under one deadline. Anyone may ask, and each check asks every
  // model-server replica and Redis: one check runs at a time, and its answer serves every request for
  // FACECOMPUTE_READINESS_CACHE_MS (1 s), so a flood of /readiness costs the dependencies one check a
  // second. The answer holds only what a load balancer needs: the contract's ReadinessResponse fields.
  let lastCheck: { at: number; result: Promise<Readiness> } | null = null;
  app.get('/readiness', async (req, reply) => {
    const now = Date.now();
    if (!lastCheck || now - lastCheck.at >= o.readinessCacheMs) {
      const result = checkReadiness(req.id);
      lastCheck = { at: now, result };
      // A check that throws is not cached (a bug, not an answer).
      result.catch(() => {
        if (lastCheck?.result === result) lastCheck = null;
      });
    }
    const r = await lastCheck.result;
    if (r.status !== 200) reply.header('retry-after', '5');
    return reply.code(r.status).send(r.body);
  });

  async function checkReadiness(requestId: string): Promise<Readiness> {
    const notReady = (error: string) => ({ status: 503, body: { status: 'error' as const, ready: false, warming: false, warmed_models: [], warmed_detectors: [], error } });
    const deadline = AbortSignal.timeout(o.readinessTimeoutMs);
    const late = new Promise<'late'>((resolve) => deadline.addEventListener('abort', () => resolve('late'), { once: true }));
    const limiterCheck = o.limiter.kind === 'redis' ? Promise.race([o.limiter.ping().then(() => 'ok' as const, () => 'down' as const), late]) : Promise.resolve('ok' as const);
    const upstreamCheck = Promise.race([
      o.upstream.readiness({ requestId, signal: deadline }).then(
        (r) => r,
        () => (deadline.aborted ? ('late' as const) : ('down' as const)),
      ),
      late,
    ]);
    const [lim, up] = await Promise.all([limiterCheck, upstreamCheck]);
    if (lim !== 'ok') return notReady('limiter_unavailable');
    if (up === 'late') return notReady('model_server_unavailable');
    if (up === 'down') return notReady('model_server_unreachable');
    const body: Record<string, unknown> = {};
    const full = up.body as unknown as Record<string, unknown>;
    for (const k of LB_FIELDS) if (full[k] !== undefined) body[k] = full[k];
    return { status: up.status === 200 ? 200 : 503, body };
  }

  app.get('/capabilities', { schema: { response: { 200: S.capabilitiesResponse } } }, async (req) => o.compute.capabilities({ requestId: req.id }));
};

/**
 * `/health` and `/readiness` for the surfaces that have no model-server readiness of their own (the
 * MCP endpoint and the console): what a Kubernetes liveness and readiness probe asks. Liveness says
 * only that the process serves; readiness runs each dependency check with a deadline, so that a
 * hung database or Redis makes the pod unready within about a second instead of hanging the probe.
 */
import type { FastifyInstance } from 'fastify';

export interface ReadinessCheck {
  /** The `error` reported when the check fails or misses its deadline, e.g. `database_unavailable`. */
  error: string;
  run(): Promise<void>;
}

/** Longer than a healthy round trip to PostgreSQL or Redis, shorter than a probe's 1 s default timeout. */
export const CHECK_DEADLINE_MS = 800;

function withDeadline(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('deadline')), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export function registerProbes(app: FastifyInstance, version: string, checks: ReadinessCheck[], deadlineMs = CHECK_DEADLINE_MS): void {
  app.get('/health', async () => ({ status: 'ok', version }));
  app.get('/readiness', async (_req, reply) => {
    const results = await Promise.allSettled(checks.map((c) => withDeadline(c.run(), deadlineMs)));
    const failed = checks.find((_, i) => results[i]!.status === 'rejected');
    if (failed) return reply.code(503).header('retry-after', '5').send({ status: 'error', ready: false, error: failed.error });
    return { status: 'ok', ready: true };
  });
}

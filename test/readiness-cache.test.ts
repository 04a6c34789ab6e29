/**
 * The gateway's /readiness is public and each check asks every model-server replica and Redis (issue
 * 24, Low): one check runs at a time and its answer serves every request for
 * FACECOMPUTE_READINESS_CACHE_MS, and the answer holds only the contract's ReadinessResponse fields
 * (what a load balancer needs), not what the model server tells the gateway about itself. Before,
 * 100 requests made 100 checks and the answer carried effective_default_model and
 * default_model_reason.
 */
import t from 'tap';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logging/logger.js';
import { buildGateway } from '../src/gateway/app.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';

async function gateway(t: Tap.Test, cacheMs: string) {
  const upstream = stubUpstream();
  let checks = 0;
  upstream.readiness = async () => {
    checks++;
    // What a model server says about itself beyond the contract (src/model-server/app.ts).
    return { status: 200, body: { status: 'ready', ready: true, warming: false, warmed_models: ['Facenet'], warmed_detectors: ['opencv'], error: '', warmed_at: '2026-11-27T00:00:00.000Z', effective_default_model: 'Dlib', default_model_reason: 'Facenet weights not installed' } as any };
  };
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_READINESS_CACHE_MS: cacheMs });
  const gw = await buildGateway({ config, accounts: new MemoryAccounts([]), logger: createLogger('test', 'silent'), upstream });
  t.teardown(() => gw.close(0));
  return { gw, checks: () => checks };
}

t.test('one check serves every request within the cache time, concurrent or not', async (t) => {
  // A minute: long enough that the test's own pace cannot matter.
  const { gw, checks } = await gateway(t, '60000');
  const answers = await Promise.all(Array.from({ length: 100 }, () => gw.app.inject({ url: '/readiness' })));
  t.same([...new Set(answers.map((a) => a.statusCode))], [200]);
  for (let i = 0; i < 20; i++) t.equal((await gw.app.inject({ url: '/readiness' })).statusCode, 200);
  t.equal(checks(), 1, '120 requests, one check of the model servers');
});

t.test('with the cache off, every request checks', async (t) => {
  const { gw, checks } = await gateway(t, '0');
  for (let i = 0; i < 5; i++) await gw.app.inject({ url: '/readiness' });
  t.equal(checks(), 5);
});

t.test('the answer holds only what a load balancer needs', async (t) => {
  const { gw } = await gateway(t, '1000');
  const body = (await gw.app.inject({ url: '/readiness' })).json();
  t.same(Object.keys(body).sort(), ['error', 'ready', 'status', 'warmed_at', 'warmed_detectors', 'warmed_models', 'warming']);
  t.notOk('default_model_reason' in body, 'nothing about the deployment beyond the contract');
});

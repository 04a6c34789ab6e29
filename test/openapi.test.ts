import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { renderOpenApi } from '../scripts/gen-openapi.js';

t.test('openapi.json is up to date (run: npm run gen:openapi)', async (t) => {
  const committed = readFileSync(resolve(REPO_ROOT, 'openapi.json'), 'utf8');
  t.equal(committed, renderOpenApi(), 'openapi.json drifted from src/gateway/schemas.ts / openapi.ts');
});

t.test('openapi.json describes exactly the six routes', async (t) => {
  const doc = JSON.parse(renderOpenApi()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
  t.equal(doc.openapi, '3.1.0');
  const routes = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)).sort();
  t.same(routes, ['GET /capabilities', 'GET /health', 'GET /readiness', 'POST /compare', 'POST /represent', 'POST /verify']);
});

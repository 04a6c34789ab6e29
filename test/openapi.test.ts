import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { renderOpenApi } from '../scripts/gen-openapi.js';
import { catalogNames } from '../src/models/manifest.js';
import { DISTANCE_METRICS, NORMALIZATIONS } from '../src/model-client/protocol.js';

t.test('openapi.json is up to date (run: npm run gen:openapi)', async (t) => {
  const committed = readFileSync(resolve(REPO_ROOT, 'openapi.json'), 'utf8');
  t.equal(committed, renderOpenApi(), 'openapi.json drifted from src/vocabulary/schemas.ts / openapi.ts');
});

t.test('openapi.json describes exactly the six routes', async (t) => {
  const doc = JSON.parse(renderOpenApi()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
  t.equal(doc.openapi, '3.1.0');
  const routes = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)).sort();
  t.same(routes, ['GET /capabilities', 'GET /health', 'GET /readiness', 'POST /compare', 'POST /represent', 'POST /verify']);
});

t.test('closed sets are enums in every request body, JSON and multipart; model and detector names from the catalog', async (t) => {
  const doc = JSON.parse(renderOpenApi()) as { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } };
  const { models, detectors } = catalogNames();
  t.ok(models.includes('Facenet') && detectors.includes('opencv'), 'the catalog is read');
  const want: Record<string, readonly string[]> = { model_name: models, detector_backend: detectors, distance_metric: DISTANCE_METRICS, normalization: NORMALIZATIONS };
  let seen = 0;
  for (const path of ['/verify', '/represent', '/compare']) {
    const content = doc.paths[path]!['post'].requestBody.content;
    const json = doc.components.schemas[String(content['application/json'].schema.$ref).split('/').pop()!];
    const multipart = content['multipart/form-data'].schema;
    for (const [form, schema] of [['JSON', json], ['multipart', multipart]] as const) {
      for (const [field, values] of Object.entries(want)) {
        const p = schema.properties[field];
        if (!p) continue;
        seen++;
        t.equal(p.type, 'string', `${path} ${form} ${field} is a string`);
        t.same(p.enum, [...values], `${path} ${form} ${field} is an enum of the known values`);
      }
    }
  }
  t.ok(seen >= 20, `every closed-set field checked (${seen})`);
});

t.test('metrics in responses are the same enum', async (t) => {
  const schemas = (JSON.parse(renderOpenApi()) as { components: { schemas: Record<string, any> } }).components.schemas;
  const metrics = [...DISTANCE_METRICS];
  t.same(schemas['VerifyResponse'].properties.similarity_metric.enum, metrics);
  t.same(schemas['CompareResponse'].properties.similarity_metric.enum, metrics);
  t.same(schemas['CapabilitiesResponse'].properties.distance_metrics.items.enum, metrics);
  t.same(schemas['CapabilitiesResponse'].properties.default_distance_metric.enum, metrics);
});

import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { renderOpenApi } from '../scripts/gen-openapi.js';
import { catalogNames } from '../src/models/manifest.js';
import { DISTANCE_METRICS, NORMALIZATIONS } from '../src/model-client/protocol.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ERROR_STATUS, type ErrorCode } from '../src/errors/index.js';
import type { CapabilitiesResponse, FacialArea, RepresentFace, RepresentResponse, VerifyResponse } from '../src/model-client/protocol.js';

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

// ---- a reference a reader can live in (issue: operationIds, tags, defaults, examples, every field, both auth headers, each route's errors)


type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any>; securitySchemes: Record<string, any> }; tags: Array<{ name: string }> };
const openapi = () => JSON.parse(renderOpenApi()) as Doc;
const operations = (doc: Doc) => Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));

t.test('every operation has an operationId, a known tag, and states its auth', async (t) => {
  const doc = openapi();
  const ids = operations(doc).map((o) => o.op.operationId);
  t.same(ids.sort(), ['capabilities', 'compare', 'health', 'readiness', 'represent', 'verify']);
  const tags = new Set(doc.tags.map((x) => x.name));
  for (const { path, op } of operations(doc)) {
    t.ok(op.tags?.length === 1 && tags.has(op.tags[0]), `${path}: tagged ${op.tags}`);
    t.ok(Array.isArray(op.security), `${path}: security stated`);
  }
  for (const path of ['/verify', '/represent', '/compare']) t.same(doc.paths[path]!['post'].security, [{ bearer: [] }, { apiKey: [] }], `${path}: Bearer or x-api-key`);
  t.match(doc.components.securitySchemes['bearer'], { type: 'http', scheme: 'bearer' });
  t.match(doc.components.securitySchemes['apiKey'], { type: 'apiKey', in: 'header', name: 'x-api-key' });
});

t.test("each compute route lists the error codes it can answer, each with when and an example", async (t) => {
  const doc = openapi();
  const codesOf = (path: string) => Object.entries(doc.paths[path]!['post'].responses).filter(([s]) => s !== '200').flatMap(([, r]: [string, any]) => Object.keys(r.content['application/json'].examples));
  t.notOk(codesOf('/represent').includes('invalid_embedding'), '/represent takes no embeddings');
  t.notOk(codesOf('/verify').includes('too_many_targets'), '/verify takes no targets');
  t.ok(codesOf('/compare').includes('too_many_targets'));
  for (const path of ['/verify', '/represent', '/compare']) {
    for (const [status, r] of Object.entries(doc.paths[path]!['post'].responses) as Array<[string, any]>) {
      if (status === '200') continue;
      for (const [code, ex] of Object.entries(r.content['application/json'].examples) as Array<[string, any]>) {
        t.equal(String(ERROR_STATUS[code as ErrorCode]), status, `${path} ${code} under its status`);
        t.equal(ex.value.error, code);
        t.match(r.description, `\`${code}\`: `, `${path} ${status} says when ${code} is answered`);
      }
    }
    for (const code of ['missing_api_key', 'invalid_api_key', 'insufficient_credits', 'rate_limited', 'queue_full', 'no_face_detected']) t.ok(codesOf(path).includes(code), `${path} lists ${code}`);
  }
});

t.test('request fields state their defaults', async (t) => {
  const s = openapi().components.schemas;
  t.equal(s['VerifyRequest'].properties.align.default, true);
  t.equal(s['VerifyRequest'].properties.enforce_detection.default, true);
  t.equal(s['VerifyRequest'].properties.distance_metric.default, 'cosine');
  t.equal(s['VerifyRequest'].properties.detector_fallback.default, true);
  t.equal(s['VerifyRequest'].properties.model_name.default, 'Facenet');
  t.equal(s['RepresentRequest'].properties.l2_normalize.default, false);
  t.equal(s['CompareRequest'].properties.expand_percentage.default, 0);
});

t.test('every example validates against its schema', async (t) => {
  const doc = openapi();
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat('binary', true).addFormat('uuid', true);
  ajv.addSchema({ $id: 'openapi.json', components: doc.components }, 'openapi.json');
  // References inside the document point at its root; the compiled schemas live beside it.
  const resolveRef = (schema: any): any => JSON.parse(JSON.stringify(schema), (k, v) => (k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `openapi.json${v}` : v));
  let n = 0;
  for (const { path, op } of operations(doc)) {
    const media = [...Object.values(op.requestBody?.content ?? {}), ...Object.values(op.responses).flatMap((r: any) => Object.values(r.content ?? {}))] as any[];
    for (const m of media) {
      for (const [name, ex] of Object.entries(m.examples ?? {}) as Array<[string, any]>) {
        const validate = ajv.compile(resolveRef(m.schema));
        t.ok(validate(ex.value), `${path} example ${name} is valid`, { errors: validate.errors });
        n++;
      }
    }
  }
  t.ok(n >= 60, `${n} examples checked`);
});

t.test('every field the service returns is in the document', async (t) => {
  // Exhaustive at compile time: a field added to the service's types without being added here fails tsc.
  const fields = <T>(keys: Record<keyof T, true>) => Object.keys(keys);
  const s = openapi().components.schemas;
  const caps = fields<CapabilitiesResponse>({ allowed_models: true, default_model: true, allowed_detectors: true, default_detector: true, distance_metrics: true, default_distance_metric: true, embedding_dims: true, thresholds: true, limits: true, input_modes: true, version: true, default_model_reason: true, default_detector_reason: true, unavailable: true, fetch_command: true, detector_fallback_unavailable: true, detector_variants: true, test_weight_models: true, model_sources: true, calibration: true });
  for (const f of caps) t.ok(f in s['CapabilitiesResponse'].properties, `capabilities.${f}`);
  for (const f of fields<VerifyResponse>({ verified: true, distance: true, threshold: true, confidence: true, model: true, detector_backend: true, similarity_metric: true, facial_areas: true, time: true })) t.ok(f in s['VerifyResponse'].properties, `verify.${f}`);
  for (const f of fields<RepresentResponse>({ results: true, model: true, detector_backend: true })) t.ok(f in s['RepresentResponse'].properties, `represent.${f}`);
  const face = s['RepresentResponse'].properties.results.items.anyOf[0];
  for (const f of fields<RepresentFace>({ embedding: true, facial_area: true, face_confidence: true, face_png: true })) t.ok(f in face.properties, `represent face.${f}`);
  for (const f of fields<FacialArea>({ x: true, y: true, w: true, h: true, left_eye: true, right_eye: true, nose: true, mouth_left: true, mouth_right: true, detector: true })) t.ok(f in face.properties.facial_area.properties, `facial_area.${f}`);
});

/**
 * The Postman collection of the REST API (examples/postman/facecompute.postman_collection.json),
 * generated from openapi.json: one folder per operation, named and described as the OpenAPI document
 * names and describes it, its requests runnable as they are (multipart uploads of the repository's
 * samples/, JSON with embeddings a previous request saved), each with tests of the status and of the
 * fields the operation's response schema requires. Run it with newman from the repository's root:
 *
 *   newman run examples/postman/facecompute.postman_collection.json --working-dir . \
 *     --env-var baseUrl=http://localhost:8080 --env-var apiKey=fc_live_...
 *
 *   node --import tsx tools/postman/collection.ts          writes the file
 *   test/postman.test.ts                                   holds the file to this and runs it with newman
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
export const COLLECTION_PATH = 'examples/postman/facecompute.postman_collection.json';

interface Schema {
  required?: string[];
  properties?: Record<string, unknown>;
  $ref?: string;
}
interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
interface OpenApi {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

type FormField = { key: string; type: 'text'; value: string } | { key: string; type: 'file'; src: string };
interface Case {
  name: string;
  body?: { mode: 'formdata'; formdata: FormField[] } | { mode: 'raw'; raw: string; options: { raw: { language: 'json' } } };
  noAuth?: boolean;
  status: number;
  /** Further assertions (Postman's test script, one statement a line). */
  checks?: string[];
  /** Lines that save values for later requests. */
  saves?: string[];
}

const file = (key: string, src: string): FormField => ({ key, type: 'file', src });
const text = (key: string, value: string): FormField => ({ key, type: 'text', value });
/** A JSON body, written as text: Postman substitutes {{variables}} in it before sending, so an embedding saved as JSON goes in unquoted. */
const json = (raw: string) => ({ mode: 'raw' as const, raw, options: { raw: { language: 'json' as const } } });

/** The requests, by operation: what a Postman user runs first. */
const CASES: Record<string, Case[]> = {
  health: [{ name: 'Health', status: 200 }],
  readiness: [{ name: 'Readiness', status: 200 }],
  capabilities: [
    {
      name: 'Capabilities',
      status: 200,
      saves: ['pm.collectionVariables.set("model", body.default_model);', 'pm.collectionVariables.set("dims", String(body.embedding_dims[body.default_model]));'],
      checks: ['pm.expect(body.allowed_models).to.include(body.default_model);'],
    },
  ],
  verify: [
    {
      name: 'Verify: two photos of one person',
      body: { mode: 'formdata', formdata: [file('img1', 'samples/img1.jpg'), file('img2', 'samples/img2.jpg')] },
      status: 200,
      checks: ['pm.expect(body.verified).to.equal(true);', 'pm.expect(body.distance).to.be.at.most(body.threshold);'],
    },
    {
      name: 'Verify: two people',
      body: { mode: 'formdata', formdata: [file('img1', 'samples/img1.jpg'), file('img2', 'samples/img3.jpg')] },
      status: 200,
      checks: ['pm.expect(body.verified).to.equal(false);'],
    },
    {
      name: 'Verify: two embeddings (decided in the gateway)',
      body: json('{"img1": {{embedding}}, "img2": {{embedding}}, "model_name": "{{model}}"}'),
      status: 200,
      checks: ['pm.expect(body.verified).to.equal(true);', 'pm.expect(body.distance).to.be.below(1e-6);'],
    },
    {
      name: 'Verify without a key: 401 missing_api_key',
      body: { mode: 'formdata', formdata: [file('img1', 'samples/img1.jpg'), file('img2', 'samples/img2.jpg')] },
      noAuth: true,
      status: 401,
      checks: ['pm.expect(body.error).to.equal("missing_api_key");'],
    },
  ],
  represent: [
    {
      name: 'Represent: the faces of a photo',
      body: { mode: 'formdata', formdata: [file('img', 'samples/img1.jpg'), text('max_faces', '1')] },
      status: 200,
      checks: ['pm.expect(body.results[0].embedding.length).to.equal(Number(pm.collectionVariables.get("dims")));'],
      saves: ['pm.collectionVariables.set("embedding", JSON.stringify(body.results[0].embedding));'],
    },
  ],
  compare: [
    {
      name: 'Compare: an embedding against stored ones, nearest first',
      body: json('{"source": {"embedding": {{embedding}}}, "targets": [{{embedding}}], "model_name": "{{model}}", "top_k": 1}'),
      status: 200,
      checks: ['pm.expect(body.results.length).to.equal(1);', 'pm.expect(body.results[0].verified).to.equal(true);'],
    },
  ],
};

function resolveSchema(api: OpenApi, s: Schema | undefined): Schema | undefined {
  if (s?.$ref) return api.components?.schemas?.[s.$ref.split('/').pop()!];
  return s;
}

/** The collection, from openapi.json. */
export function collection(api: OpenApi = JSON.parse(readFileSync(join(REPO, 'openapi.json'), 'utf8')) as OpenApi): unknown {
  const folders = [];
  for (const [path, ops] of Object.entries(api.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const cases = CASES[op.operationId];
      if (!cases) throw new Error(`tools/postman/collection.ts: no request for ${op.operationId} (${method.toUpperCase()} ${path}): add one to CASES`);
      const items = cases.map((c) => {
        const schema = resolveSchema(api, op.responses[String(c.status)]?.content?.['application/json']?.schema);
        if (!op.responses[String(c.status)]) throw new Error(`${op.operationId}: openapi.json declares no ${c.status} answer`);
        const required = schema?.required ?? [];
        const exec = [
          `pm.test(${JSON.stringify(`${c.status}, with the fields ${op.operationId}'s schema requires`)}, function () {`,
          `  pm.response.to.have.status(${c.status});`,
          '  const body = pm.response.json();',
          ...required.map((k) => `  pm.expect(body).to.have.property(${JSON.stringify(k)});`),
          ...(c.checks ?? []).map((l) => `  ${l}`),
          ...(c.saves ?? []).map((l) => `  ${l}`),
          '});',
        ];
        return {
          name: c.name,
          event: [{ listen: 'test', script: { type: 'text/javascript', exec } }],
          request: {
            method: method.toUpperCase(),
            ...(c.noAuth ? { auth: { type: 'noauth' } } : {}),
            header: c.body?.mode === 'raw' ? [{ key: 'content-type', value: 'application/json' }] : [],
            ...(c.body ? { body: c.body } : {}),
            url: { raw: `{{baseUrl}}${path}`, host: ['{{baseUrl}}'], path: path.split('/').filter(Boolean) },
          },
        };
      });
      folders.push({ name: `${method.toUpperCase()} ${path}`, description: [op.summary, op.description].filter(Boolean).join('\n\n'), item: items });
    }
  }
  // Capabilities first (it saves the model and dimensions), represent before what uses its embedding.
  const order = ['GET /health', 'GET /readiness', 'GET /capabilities', 'POST /represent', 'POST /verify', 'POST /compare'];
  folders.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  return {
    info: {
      name: `${api.info.title} ${api.info.version}`,
      description: `Generated from openapi.json by tools/postman/collection.ts. Set baseUrl (the REST gateway) and apiKey (a REST key); run from the repository's root (the uploads read samples/).`,
      schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json',
    },
    auth: { type: 'bearer', bearer: [{ key: 'token', value: '{{apiKey}}', type: 'string' }] },
    variable: [
      { key: 'baseUrl', value: 'http://localhost:8080' },
      { key: 'apiKey', value: '' },
      { key: 'model', value: 'Facenet' },
      { key: 'dims', value: '128' },
      { key: 'embedding', value: '[]' },
    ],
    item: folders,
  };
}

export const render = () => `${JSON.stringify(collection(), null, 2)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(join(REPO, COLLECTION_PATH), render());
  console.log(`wrote ${COLLECTION_PATH}`);
}

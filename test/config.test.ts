import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, ConfigError, VARS, CLIENT_VARS, assertStartupConfig, startupProblems } from '../src/config/index.js';
import { REPO_ROOT } from './helpers/shared.js';

t.test('defaults follow contract §1', async (t) => {
  const c = loadConfig({});
  t.equal(c.ports.gateway, 8080);
  t.equal(c.ports.mcp, 8081);
  t.equal(c.ports.console, 8082);
  t.equal(c.ports.modelServer, 8090);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.models.defaultModel, 'Facenet');
  t.same(c.models.weightSources, ['canonical', 'debian', 'pypi', 'npm'], 'the canonical URL and every registry client');
  t.equal(c.models.allowDegradedStart, false, 'a default that cannot be served stops the start unless the operator says otherwise');
  t.equal(c.models.defaultDetector, 'opencv');
  t.equal(c.inputs.remoteImages, 'off');
  t.equal(c.redisUrl, '');
  t.same(c.modelServerUrls, ['http://127.0.0.1:8090']);
});

t.test('bad values are refused with the variable named', async (t) => {
  t.throws(() => loadConfig({ FACECOMPUTE_GATEWAY_PORT: 'eighty' }), ConfigError);
  t.throws(() => loadConfig({ FACECOMPUTE_GATEWAY_PORT: '70000' }), /FACECOMPUTE_GATEWAY_PORT/);
  t.throws(() => loadConfig({ FACECOMPUTE_REMOTE_IMAGES: 'everything' }), /FACECOMPUTE_REMOTE_IMAGES/);
  t.throws(() => loadConfig({ FACECOMPUTE_REMOTE_IMAGES: 'allowlist' }), /FACECOMPUTE_REMOTE_ORIGINS/);
  t.throws(() => loadConfig({ FACECOMPUTE_TEST_WEIGHTS: 'maybe' }), /FACECOMPUTE_TEST_WEIGHTS/);
  t.throws(() => loadConfig({ FACECOMPUTE_WEIGHT_SOURCES: 'canonical,cargo' }), /FACECOMPUTE_WEIGHT_SOURCES must list one or more of canonical, debian, pypi, npm, got "cargo"/);
  t.throws(() => loadConfig({ FACECOMPUTE_ALLOW_DEGRADED_START: 'perhaps' }), /FACECOMPUTE_ALLOW_DEGRADED_START/);
  t.throws(() => loadConfig({ FACECOMPUTE_WEIGHT_SOURCES: ' , ' }), /FACECOMPUTE_WEIGHT_SOURCES/);
  t.same(loadConfig({ FACECOMPUTE_WEIGHT_SOURCES: 'canonical' }).models.weightSources, ['canonical']);
});

t.test('an unknown FACECOMPUTE_ variable is a typo, not a silent default', async (t) => {
  t.throws(() => loadConfig({ FACECOMPUTE_GATEWAY_PROT: '1' }), /unknown configuration variable FACECOMPUTE_GATEWAY_PROT/);
});

t.test('lists are split and trimmed', async (t) => {
  const c = loadConfig({ FACECOMPUTE_ALLOWED_MODELS: ' Dlib , SFace,,', FACECOMPUTE_MODEL_SERVER_URLS: 'http://a:1,http://b:2' });
  t.same(c.models.allowedModels, ['Dlib', 'SFace']);
  t.same(c.modelServerUrls, ['http://a:1', 'http://b:2']);
});

t.test('docs/configuration.md documents every variable with its default', async (t) => {
  // The table there is generated from spec.ts (tools/docs/blocks.ts; test/readme-figures.test.ts holds it).
  const page = readFileSync(resolve(REPO_ROOT, 'docs/configuration.md'), 'utf8');
  for (const v of VARS) {
    t.ok(page.includes(`| \`${v.name}\` | ${v.default === '' ? '(unset)' : `\`${v.default}\``} |`), `${v.name} is in docs/configuration.md with its default`);
  }
});

t.test("the clients' documented variables do not stop the service from starting", async (t) => {
  // Issue 39: a shell that exports FACECOMPUTE_URL and FACECOMPUTE_API_KEY for a client still runs `serve`.
  const env = { FACECOMPUTE_URL: 'http://127.0.0.1:9', FACECOMPUTE_API_KEY: 'fc_x', FACECOMPUTE_DEEPFACE_DEFAULT_MODEL: 'Dlib' };
  t.same(loadConfig(env), loadConfig({}), 'known and ignored');
  const page = readFileSync(resolve(REPO_ROOT, 'docs/configuration.md'), 'utf8');
  for (const v of CLIENT_VARS) t.ok(page.includes(`| \`${v.name}\` | client-side, ignored by the service |`), `${v.name} documented as client-side`);
  for (const readme of ['clients/js/README.md', 'clients/python/README.md']) {
    const named = new Set(readFileSync(resolve(REPO_ROOT, readme), 'utf8').match(/FACECOMPUTE_[A-Z0-9_]+/g) ?? []);
    for (const name of named) t.ok(CLIENT_VARS.some((v) => v.name === name), `${readme} names ${name}, a client variable the service knows`);
  }
});

t.test('test-harness variables do not stop the service from starting', async (t) => {
  t.doesNotThrow(() => loadConfig({ FACECOMPUTE_TEST_DATABASE_URL: 'postgres://x', FACECOMPUTE_TEST_REDIS_URL: 'redis://x' }));
});

// Issue 24, High 4: behind a TLS-terminating proxy without FACECOMPUTE_TRUSTED_PROXIES every client has
// the proxy's address, so one client's failed sign-ins lock everyone out.
t.test('production checks: a TLS-terminating proxy in front needs FACECOMPUTE_TRUSTED_PROXIES', async (t) => {
  const publicHttps = {
    FACECOMPUTE_PRODUCTION: 'true',
    FACECOMPUTE_HOST: '0.0.0.0',
    FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.example',
    FACECOMPUTE_PUBLIC_MCP_URL: 'https://api.example/mcp',
    FACECOMPUTE_PUBLIC_CONSOLE_URL: 'https://console.example',
    FACECOMPUTE_BILLING_PROVIDER: 'stripe',
    FACECOMPUTE_STRIPE_SECRET_KEY: 'sk_live_x',
    FACECOMPUTE_STRIPE_WEBHOOK_SECRET: 'whsec_0123456789abcdef',
    FACECOMPUTE_MAILER: 'smtp',
    FACECOMPUTE_SMTP_URL: 'smtps://mailer:pw@smtp.example:465',
  };
  for (const surface of ['console', 'gateway', 'mcp'] as const) {
    t.match(startupProblems(loadConfig(publicHttps), surface), [/FACECOMPUTE_TRUSTED_PROXIES is required behind a TLS-terminating proxy/], `${surface}: refused without trusted proxies`);
    t.same(startupProblems(loadConfig({ ...publicHttps, FACECOMPUTE_TRUSTED_PROXIES: '10.0.0.0/8' }), surface), [], `${surface}: starts with them`);
  }
  t.same(startupProblems(loadConfig(publicHttps), 'model-server'), [], 'the model server has no client addresses');
  t.throws(() => assertStartupConfig(loadConfig(publicHttps), 'console'), /facecompute console refuses this configuration:\n- FACECOMPUTE_TRUSTED_PROXIES/);
  // Outside production the same configuration starts (development behind a proxy is the operator's call).
  t.same(startupProblems(loadConfig({ ...publicHttps, FACECOMPUTE_PRODUCTION: 'false' }), 'console'), []);
});

t.test('production checks: https public URLs, Stripe with its webhook secret, SMTP, real weights', async (t) => {
  const problems = startupProblems(loadConfig({ FACECOMPUTE_PRODUCTION: 'true', FACECOMPUTE_TEST_WEIGHTS: 'true' }), 'console');
  for (const m of [/FACECOMPUTE_TEST_WEIGHTS=true/, /FACECOMPUTE_PUBLIC_BASE_URL must be https/, /FACECOMPUTE_PUBLIC_CONSOLE_URL must be https/, /FACECOMPUTE_BILLING_PROVIDER must be stripe/, /FACECOMPUTE_MAILER must be smtp/]) {
    t.ok(problems.some((p) => m.test(p)), `refused: ${m.source}`);
  }
  t.match(startupProblems(loadConfig({ FACECOMPUTE_PRODUCTION: 'true', FACECOMPUTE_TEST_WEIGHTS: 'true' }), 'model-server'), [/FACECOMPUTE_TEST_WEIGHTS/], 'the model server: test weights only');
  // In every mode: Stripe needs the key and the webhook secret, on the console only.
  const stripe = loadConfig({ FACECOMPUTE_BILLING_PROVIDER: 'stripe' });
  t.match(startupProblems(stripe, 'console'), [/FACECOMPUTE_STRIPE_SECRET_KEY is required/, /FACECOMPUTE_STRIPE_WEBHOOK_SECRET/]);
  t.same(startupProblems(stripe, 'gateway'), [], 'the gateway holds no Stripe secret');
  t.match(startupProblems(loadConfig({ FACECOMPUTE_MAILER: 'smtp' }), 'console'), [/FACECOMPUTE_MAILER=smtp needs FACECOMPUTE_SMTP_URL/]);
});

t.test('Stripe is reached over https only (plain HTTP to a loopback stripe-mock in tests)', async (t) => {
  t.throws(() => loadConfig({ FACECOMPUTE_STRIPE_API_BASE: 'http://api.stripe.com' }), /FACECOMPUTE_STRIPE_API_BASE must be an https:\/\/ URL/);
  t.throws(() => loadConfig({ FACECOMPUTE_STRIPE_API_BASE: 'http://10.0.0.5:12111' }), /https/);
  t.doesNotThrow(() => loadConfig({ FACECOMPUTE_STRIPE_API_BASE: 'http://127.0.0.1:12111' }));
  t.doesNotThrow(() => loadConfig({ FACECOMPUTE_STRIPE_API_BASE: 'https://api.stripe.com' }));
});

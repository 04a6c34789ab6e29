import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, ConfigError, VARS } from '../src/config/index.js';
import { REPO_ROOT } from './helpers/shared.js';

t.test('defaults follow contract §1', async (t) => {
  const c = loadConfig({});
  t.equal(c.ports.gateway, 8080);
  t.equal(c.ports.mcp, 8081);
  t.equal(c.ports.console, 8082);
  t.equal(c.ports.modelServer, 8090);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.models.defaultModel, 'Facenet');
  t.same(c.models.weightSources, ['canonical', 'pypi'], 'canonical first, then registry carriers');
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
  t.throws(() => loadConfig({ FACECOMPUTE_WEIGHT_SOURCES: 'canonical,npm' }), /FACECOMPUTE_WEIGHT_SOURCES must list one or more of canonical, pypi, got "npm"/);
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

t.test('the README documents every variable with its default', async (t) => {
  const readme = readFileSync(resolve(REPO_ROOT, 'README.md'), 'utf8');
  for (const v of VARS) {
    t.ok(readme.includes(`\`${v.name}\``), `${v.name} is in the README`);
  }
});

t.test('test-harness variables do not stop the service from starting', async (t) => {
  t.doesNotThrow(() => loadConfig({ FACECOMPUTE_TEST_DATABASE_URL: 'postgres://x', FACECOMPUTE_TEST_REDIS_URL: 'redis://x' }));
});

/**
 * Secrets in a request line stay out of the logs: the console's email link
 * (`/verify-email?token=…`) is logged with its token redacted, by every surface's logger
 * (src/logging/logger.ts), whatever line carries the request's URL.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../src/config/index.js';
import { buildConsole } from '../src/console/main.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { createLogger, redactUrl } from '../src/logging/logger.js';

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('/verify-email?token=abc.def'), '/verify-email?token=[redacted]');
  t.equal(redactUrl('/x?page=2&key=fc_live_1&b=3'), '/x?page=2&key=[redacted]&b=3');
  t.equal(redactUrl('/docs/limits.md'), '/docs/limits.md');
});

t.test("the console's request log holds no email-link token", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-log-redaction-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let lines = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines += String(chunk);
      done();
    },
  });
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'info', FACECOMPUTE_DATA_DIR: dir });
  const store = await createAccountsStore(config);
  t.teardown(() => store.close());
  const app = await buildConsole({ config, store, logger: createLogger('console', 'info', sink) });
  t.teardown(() => app.close());
  const secret = 'eyJTOKENSECRETVALUE.c2lnbmF0dXJl';
  await app.inject({ method: 'GET', url: `/verify-email?token=${secret}` });
  await app.inject({ method: 'POST', url: `/api/verify-email?token=${secret}`, payload: {} });
  t.ok(lines.includes('/verify-email?token=[redacted]'), 'the request is logged, its token redacted');
  t.notOk(lines.includes(secret), 'the token is in no log line');
});

/** Builds a console on a test database; `api` calls its JSON API through inject. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildConsole, type ConsoleDeps } from '../../src/console/main.js';
import type { AccountsStore } from '../../src/accounts/index.js';
import type { TestDb } from './accounts-db.js';

export interface TestConsole {
  app: FastifyInstance;
  store: AccountsStore;
  api(method: string, url: string, opts?: { token?: string; body?: unknown; headers?: Record<string, string>; ip?: string }): Promise<LightMyRequestResponse>;
}

export async function testConsole(tdb: TestDb, extra: Partial<ConsoleDeps> = {}): Promise<TestConsole> {
  const store = await tdb.open();
  const app = await buildConsole({ config: tdb.config, store, ...extra });
  return {
    app,
    store,
    api(method, url, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
      return app.inject({
        method: method as 'GET',
        url,
        headers,
        ...(opts.ip ? { remoteAddress: opts.ip } : {}),
        ...(opts.body !== undefined ? { payload: opts.body as object } : {}),
      });
    },
  };
}

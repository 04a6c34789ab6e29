// The three public surfaces (gateway, MCP endpoint, console) in this process on ephemeral loopback
// ports, built from one config, one accounts port and one logger, as `facecompute serve` wires them:
// for tests that send the same raw requests to every surface.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config/index.js';
import type { Logger } from '../../src/logging/logger.js';
import type { AccountsPort } from '../../src/accounts/api.js';
import { buildGateway, type Gateway } from '../../src/gateway/app.js';
import { createMcp } from '../../src/mcp/main.js';
import { buildConsole } from '../../src/console/app.js';
import { createAccountsStore, type AccountsStore } from '../../src/accounts/index.js';

export interface Surfaces {
  gw: Gateway;
  mcp: FastifyInstance;
  console: FastifyInstance;
  /** The console's own store (the gateway and MCP endpoint use the accounts port given). */
  store: AccountsStore;
  ports: { gateway: number; mcp: number; console: number };
  close(): Promise<void>;
}

const portOf = (app: FastifyInstance) => (app.server.address() as { port: number }).port;

export async function startSurfaces(o: { config: Config; accounts: AccountsPort; logger: Logger }): Promise<Surfaces> {
  const { config, accounts, logger } = o;
  const gw = await buildGateway({ config, accounts, logger });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const mcp = (await createMcp({ config, accounts, logger, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue })).app;
  await mcp.listen({ host: '127.0.0.1', port: 0 });
  const store = await createAccountsStore(config);
  const consoleApp = await buildConsole({ config, store, logger });
  await consoleApp.listen({ host: '127.0.0.1', port: 0 });
  return {
    gw,
    mcp,
    console: consoleApp,
    store,
    ports: { gateway: portOf(gw.app), mcp: portOf(mcp), console: portOf(consoleApp) },
    async close() {
      await consoleApp.close();
      await mcp.close();
      await gw.close(100);
      await store.close();
    },
  };
}

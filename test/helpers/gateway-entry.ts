/**
 * Test-only entry: runs the real gateway (src/gateway/main.ts runGateway) in its own process with the
 * in-memory accounts store and, for remote-URL tests, a fake DNS resolver and a test dialler.
 *   TEST_KEYS      JSON TestKey[]
 *   TEST_DNS       JSON { host: [addresses] }           (optional)
 *   TEST_DIAL      JSON { "addr:port": port-on-127.0.0.1 } (optional)
 *   TEST_CA_FILE   PEM file trusted by the fetcher       (optional)
 * Prints "LISTENING <port>" and "ACCOUNTS <port>" (a loopback JSON view of the accounts state).
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { runGateway } from '../../src/gateway/main.js';
import { MemoryAccounts, type TestKey } from './memory-accounts.js';
import type { LookupFn } from '../../src/service/inputs/remote-fetch.js';

const keys = JSON.parse(process.env['TEST_KEYS'] ?? '[]') as TestKey[];
const accounts = new MemoryAccounts(keys);
const dns = process.env['TEST_DNS'] ? (JSON.parse(process.env['TEST_DNS']) as Record<string, string[]>) : null;
const dial = process.env['TEST_DIAL'] ? (JSON.parse(process.env['TEST_DIAL']) as Record<string, number>) : null;
const lookup: LookupFn | undefined = dns
  ? async (host) => {
      const a = dns[host];
      if (!a) throw new Error('ENOTFOUND');
      return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    }
  : undefined;

const side = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ used: Object.fromEntries(accounts.used), refunds: accounts.refunds }));
});
side.listen(0, '127.0.0.1', () => {
  const a = side.address();
  process.stdout.write(`ACCOUNTS ${typeof a === 'object' && a ? a.port : 0}\n`);
});

const code = await runGateway({
  accounts,
  remoteFetch: {
    ...(lookup ? { lookup } : {}),
    ...(dial
      ? {
          testDial: (address: string, port: number) => {
            const p = dial[`${address}:${port}`];
            if (!p) throw new Error('no test dial for ' + address);
            return { host: '127.0.0.1', port: p };
          },
        }
      : {}),
    ...(process.env['TEST_CA_FILE'] ? { ca: readFileSync(process.env['TEST_CA_FILE']) } : {}),
  },
  onListening: (port) => process.stdout.write(`LISTENING ${port}\n`),
});
side.close();
process.exit(code);

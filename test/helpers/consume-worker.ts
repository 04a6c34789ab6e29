/** A separate thread with its own SQLite connection, consuming free calls of one account. */
import { parentPort, workerData } from 'node:worker_threads';
import { loadConfig } from '../../src/config/index.js';
import { createAccountsStore } from '../../src/accounts/index.js';

const { dataDir, accountId, calls } = workerData as { dataDir: string; accountId: string; calls: number };
const store = await createAccountsStore(loadConfig({ FACECOMPUTE_DATA_DIR: dataDir, FACECOMPUTE_LOG_LEVEL: 'silent' }));
const results = await Promise.allSettled(Array.from({ length: calls }, () => store.consume(accountId)));
await store.close();
parentPort!.postMessage({
  ok: results.filter((r) => r.status === 'fulfilled').length,
  refused: results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'insufficient_credits').length,
});

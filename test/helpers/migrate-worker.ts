/** A separate thread that opens (and so migrates) one SQLite file when told to: all of them at once. */
import { parentPort, workerData } from 'node:worker_threads';
import { loadConfig } from '../../src/config/index.js';
import { createAccountsStore } from '../../src/accounts/index.js';

const { dataDir } = workerData as { dataDir: string };
parentPort!.once('message', async () => {
  try {
    const store = await createAccountsStore(loadConfig({ FACECOMPUTE_DATA_DIR: dataDir, FACECOMPUTE_LOG_LEVEL: 'silent' }));
    await store.close();
    parentPort!.postMessage({ ok: true });
  } catch (err) {
    parentPort!.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
  }
});
parentPort!.postMessage('loaded');

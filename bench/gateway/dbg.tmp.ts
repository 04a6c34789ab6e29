import { startFakeModelServer, startGateway } from '../../test/helpers/procs.js';
import { makePng } from '../../test/helpers/images.js';
const ms = await startFakeModelServer();
const gw = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_LOG_LEVEL: 'error', TEST_KEYS: JSON.stringify([{ key: 'k', accountId: 'b', kind: 'rest', credits: 1e12 }]) });
const base = `http://127.0.0.1:${gw.port}`;
const H = { authorization: 'Bearer k', 'content-type': 'application/json' };
const png = makePng(64,64,1).toString('base64');
for (const [name, path, body] of [['verify', '/verify', { img1: png, img2: png }], ['represent', '/represent', { img: png }], ['verifyvec', '/verify', { img1: Array(128).fill(0.1), img2: Array(128).fill(0.2) }], ['badimg', '/represent', { img: 'AAAA' }]] as const) {
  const ts: number[] = [];
  for (let i = 0; i < 15; i++) { const t0 = performance.now(); const r = await fetch(base + path, { method: 'POST', headers: H, body: JSON.stringify(body) }); await r.text(); ts.push(performance.now() - t0); }
  console.log(name, ts.map((x) => x.toFixed(1)).join(' '));
}
gw.kill('SIGKILL'); ms.kill('SIGKILL'); process.exit(0);

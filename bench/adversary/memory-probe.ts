/**
 * The model server's peak memory per detector and image size, beside src/model-client/job-cost.ts's
 * estimate, which the memory gate admits by: the estimate must stay above what was measured.
 *   npm run build:ts && node --import ./test/setup/loopback-only.mjs --import tsx bench/adversary/memory-probe.ts
 *   (writes bench/results/model-server-memory.json)
 */
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processTree, procMemory, settle } from '../lib/proc.js';
import { createKey, startOurs } from '../lib/services.js';
import { makeUniformPng } from '../../test/helpers/images.js';
import { jobCost } from '../../src/model-client/job-cost.js';
import { machineInfo } from '../lib/machine.js';
import { REPO_ROOT } from '../lib/paths.js';
const OUT = join(REPO_ROOT, 'bench/results/model-server-memory.json');
const svc = await startOurs({ label: 'memprobe', logDir: mkdtempSync(join(tmpdir(), 'memprobe-')), models: ['Dlib'], env: { FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES: String(20 * 2 ** 30), FACECOMPUTE_LOG_LEVEL: 'warn', FACECOMPUTE_QUEUE_TIMEOUT_MS: '120000', FACECOMPUTE_UPSTREAM_TIMEOUT_MS: '120000' } });
const key = await createKey(svc.consoleUrl);
const ms = processTree(svc.proc.pid).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('model-server'))!;
const caps = (await (await fetch(`${svc.gatewayUrl}/capabilities`)).json()) as { allowed_detectors: string[] };
console.log('detectors', caps.allowed_detectors.join(','));
const out: unknown[] = [];
for (const side of [2000, 4000, 6324]) {
  const png = makeUniformPng(side, side, 0).toString('base64');
  for (const det of ['opencv', 'mtcnn', 'fastmtcnn', 'retinaface', 'yunet', 'skip']) {
    if (!caps.allowed_detectors.includes(det)) continue;
    await settle(svc.proc.pid, { windowMs: 1000, idleShare: 0.6, timeoutMs: 15000 }).catch(() => undefined);
    const idle = procMemory(ms)!.vmRssMb;
    writeFileSync(`/proc/${ms}/clear_refs`, '5');
    const t0 = performance.now();
    const r = await fetch(`${svc.gatewayUrl}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img1: png, img2: png, detector_backend: det, enforce_detection: false }) });
    const body = (await r.json()) as { error?: string };
    const peak = procMemory(ms)!.vmHwmMb;
    const est = jobCost({ op: 'verify', detector_backend: det, align: true } as never, [{ width: side, height: side }, { width: side, height: side }], { detectorMaxSide: 0 });
    const row = { side, det, status: r.status, error: body.error ?? null, ms: Math.round(performance.now() - t0), idle_mb: idle, peak_mb: peak, rise_mb: peak - idle, est_seq_mb: Math.round(est.sequential / 2 ** 20), est_conc_mb: Math.round(est.concurrent / 2 ** 20) };
    console.log(JSON.stringify(row));
    out.push(row);
  }
}
// Then, with the default budget, the largest requests it accepts, two at once: the model server's
// peak since it started (what a pod's limit meets) must stay within the 2 GiB budget.
await svc.stop();
const dflt = await startOurs({ label: 'memprobe-default', logDir: mkdtempSync(join(tmpdir(), 'memprobe-')), models: ['Dlib'], env: { FACECOMPUTE_LOG_LEVEL: 'warn' } });
const key2 = await createKey(dflt.consoleUrl);
const ms2 = processTree(dflt.proc.pid).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('model-server'))!;
const pairs: unknown[] = [];
for (const [det, side] of [['opencv', 6324], ['yunet', 6324], ['retinaface', 6324], ['skip', 6324], ['fastmtcnn', 4000], ['mtcnn', 4000]] as const) {
  const png = makeUniformPng(side, side, 0).toString('base64');
  const body = JSON.stringify({ img1: png, img2: png, detector_backend: det, enforce_detection: false });
  const answers = await Promise.all([0, 1].map(async () => {
    const r = await fetch(`${dflt.gatewayUrl}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key2}`, 'content-type': 'application/json' }, body });
    return `${r.status} ${((await r.json()) as { error?: string }).error ?? 'ok'}`;
  }));
  const row = { det, side, answers, peak_since_start_mb: Math.round(procMemory(ms2)!.vmHwmMb) };
  console.log(JSON.stringify(row));
  pairs.push(row);
}
await dflt.stop();
writeFileSync(OUT, JSON.stringify({ machine: machineInfo(), note: 'rows: a verify of two flat (all-zero) PNGs, enforce_detection false, one request at a time, the memory gate opened wide (20 GiB); rise_mb: the model server peak (VmHWM) over its RSS just before; est_*: src/model-client/job-cost.ts at the commit recorded. pairs: the same verify sent twice at once to a service with the default 2 GiB budget; peak_since_start_mb: the model server VmHWM since it started', rows: out, pairs }, null, 1));
process.exit(0);

/**
 * Cold start and memory.
 * - coldstart: from process start to /readiness 200 for us (every installed model and detector
 *   warmed), and to the first answered /verify for DeepFace's API (it has no readiness route; its
 *   models are preloaded at start, DEEPFACE_FACE_RECOGNITION_MODELS=Dlib, the recommended setting).
 *   Ours to the first answered /verify is reported too. Starts alternate between the two. Converted
 *   ONNX graphs come from the models cache (a first, untimed start fills it): conversion is a one-off
 *   install step, not a start-up cost.
 * - memory: peak RSS (VmHWM summed over the process tree: gateway + model server for us, gunicorn
 *   master + worker for DeepFace) after the same load, /verify at concurrency 4.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyBody } from '../lib/bodies.js';
import { load, postJson } from '../lib/load.js';
import { treeMemory } from '../lib/proc.js';
import { createKey, startDeepFace, startOurs } from '../lib/services.js';
import { deepFaceReady } from './service.js';
import type { SuiteContext } from './context.js';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

export async function coldStartSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const body = verifyBody('opencv');
  // Five rounds: DeepFace's start varies by a second from one run to the next (3.6-4.4 s seen), so the
  // median of two was at the mercy of one slow or fast start.
  const rounds = ctx.quick ? 1 : 5;
  ctx.log('coldstart: priming the models cache (untimed start)');
  const prime = await startOurs({ logDir: ctx.logDir, label: 'coldstart-prime' });
  await prime.stop();
  const ours: Array<{ ready_s: number; first_verify_s: number }> = [];
  const deepface: Array<{ first_verify_s: number }> = [];
  for (let r = 0; r < rounds; r++) {
    const home = mkdtempSync(join(tmpdir(), 'deepface-home-'));
    const df = await startDeepFace({ logDir: ctx.logDir, label: `coldstart-deepface-${r}`, home });
    try {
      const at = await deepFaceReady(df, body, 600_000);
      deepface.push({ first_verify_s: (at - df.proc.startedAt) / 1000 });
    } finally {
      await df.stop();
    }
    const o = await startOurs({ logDir: ctx.logDir, label: `coldstart-ours-${r}` });
    try {
      const key = await createKey(o.consoleUrl);
      const v = await postJson(`${o.gatewayUrl}/verify`, body, { authorization: `Bearer ${key}` });
      if (v.status !== 200) throw new Error(`our first /verify answered ${v.status}`);
      ours.push({ ready_s: o.readyMs / 1000, first_verify_s: (performance.now() - o.proc.startedAt) / 1000 });
    } finally {
      await o.stop();
    }
    ctx.log(`coldstart round ${r + 1}: ours ready ${ours.at(-1)?.ready_s.toFixed(1)} s (first verify ${ours.at(-1)?.first_verify_s.toFixed(1)} s); DeepFace first verify ${deepface.at(-1)?.first_verify_s.toFixed(1)} s`);
  }
  const result = {
    rounds,
    ours,
    deepface,
    ours_ready_s: median(ours.map((o) => o.ready_s)),
    ours_first_verify_s: median(ours.map((o) => o.first_verify_s)),
    deepface_first_verify_s: median(deepface.map((d) => d.first_verify_s)),
    ratio: 0,
  };
  result.ratio = result.ours_ready_s / result.deepface_first_verify_s;
  ctx.table(
    ['', 'ours: to /readiness 200', 'ours: to first verify', 'DeepFace: to first verify', 'ratio (ours ready / DeepFace)'],
    [['median s', result.ours_ready_s.toFixed(1), result.ours_first_verify_s.toFixed(1), result.deepface_first_verify_s.toFixed(1), result.ratio.toFixed(3)]],
  );
  return result;
}

export async function memorySuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const body = verifyBody('opencv');
  const connections = 4;
  const home = mkdtempSync(join(tmpdir(), 'deepface-home-'));
  const o = await startOurs({ logDir: ctx.logDir, label: 'memory-ours' });
  let oursIdle;
  let oursLoaded;
  let oursLoad;
  try {
    oursIdle = treeMemory(o.proc.pid);
    const key = await createKey(o.consoleUrl);
    oursLoad = await load({ url: `${o.gatewayUrl}/verify`, body, headers: { authorization: `Bearer ${key}` }, connections, seconds: ctx.quick ? 5 : 10 });
    oursLoaded = treeMemory(o.proc.pid);
  } finally {
    await o.stop();
  }
  const df = await startDeepFace({ logDir: ctx.logDir, label: 'memory-deepface', home });
  let dfIdle;
  let dfLoaded;
  let dfLoad;
  try {
    await deepFaceReady(df, body, 600_000);
    dfIdle = treeMemory(df.proc.pid);
    dfLoad = await load({ url: `${df.url}/verify`, body, connections, seconds: ctx.quick ? 30 : 60, timeoutS: 600 });
    dfLoaded = treeMemory(df.proc.pid);
  } finally {
    await df.stop();
  }
  const result = {
    load: `/verify Dlib opencv at c${connections}: ours ${oursLoad.ok} answers, DeepFace ${dfLoad.ok}`,
    ours: { idle_rss_mb: oursIdle.rssMb, peak_rss_mb: oursLoaded.peakRssMb, processes: oursLoaded.processes },
    deepface: { idle_rss_mb: dfIdle.rssMb, peak_rss_mb: dfLoaded.peakRssMb, processes: dfLoaded.processes },
    ratio: oursLoaded.peakRssMb / dfLoaded.peakRssMb,
  };
  ctx.table(
    ['', 'idle RSS MB', 'peak RSS MB (VmHWM, tree)', 'processes'],
    [
      ['ours', oursIdle.rssMb.toFixed(0), oursLoaded.peakRssMb.toFixed(0), oursLoaded.processes.map((p) => `${p.name}:${p.vmHwmMb.toFixed(0)}`).join(' ')],
      ['DeepFace', dfIdle.rssMb.toFixed(0), dfLoaded.peakRssMb.toFixed(0), dfLoaded.processes.map((p) => `${p.name}:${p.vmHwmMb.toFixed(0)}`).join(' ')],
    ],
  );
  ctx.log(`memory: peak RSS ratio (ours / DeepFace) ${result.ratio.toFixed(2)}`);
  return result;
}

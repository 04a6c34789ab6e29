/**
 * The /compare roofline end to end over HTTP: one 128-d source embedding against 1k, 10k and 100k
 * targets, sent as a JSON array of arrays (`targets`) or as base64 little-endian float32
 * (`targets_b64`), through our gateway to the model server and back. Reported as targets per
 * second of wall time per request (sequential requests, so the figure is the latency of one), next
 * to the native kernel's figure from bench/results/compare.json when that file is present. The
 * distance of the nearest target is checked to match between the two encodings.
 * The request-size limit is raised for this suite only: 100k targets in JSON are about 130 MB.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESULTS_DIR } from '../lib/paths.js';
import { createKey, startOurs } from '../lib/services.js';
import { summarize } from '../lib/stats.js';
import type { SuiteContext } from './context.js';

const DIMS = 128;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function targets(n: number): Float32Array {
  const r = rng(n);
  const out = new Float32Array(n * DIMS);
  // Values of the size Dlib produces (|x| < 0.3), rounded to 6 decimals so both encodings carry
  // the same numbers.
  for (let i = 0; i < out.length; i++) out[i] = Math.round((r() * 0.6 - 0.3) * 1e6) / 1e6;
  return out;
}

function nativeRows(): Array<{ n: number; impl: string; vectors_per_s: number }> {
  const path = join(RESULTS_DIR, 'compare.json');
  if (!existsSync(path)) return [];
  try {
    const rows = JSON.parse(readFileSync(path, 'utf8')) as Array<{ n: number; dims: number; metric: string; impl: string; vectors_per_s: number }>;
    return rows.filter((r) => r.dims === DIMS && r.metric === 'cosine').map((r) => ({ n: r.n, impl: r.impl, vectors_per_s: r.vectors_per_s }));
  } catch {
    return [];
  }
}

export async function compareSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const sizes = [1000, 10_000, 100_000];
  const repeats = (n: number) => (n >= 100_000 ? (ctx.quick ? 2 : 4) : n >= 10_000 ? (ctx.quick ? 4 : 10) : ctx.quick ? 10 : 30);
  const ours = await startOurs({
    logDir: ctx.logDir,
    label: 'compare-ours',
    env: { FACECOMPUTE_MAX_REQUEST_BYTES: String(256 * 2 ** 20), FACECOMPUTE_MAX_TARGETS: '100000' },
  });
  try {
    const key = await createKey(ours.consoleUrl);
    const url = `${ours.gatewayUrl}/compare`;
    const source = Array.from(targets(1).subarray(0, DIMS));
    const rows: Array<Record<string, unknown>> = [];
    for (const n of sizes) {
      const t = targets(n);
      const asJson: number[][] = [];
      for (let i = 0; i < n; i++) asJson.push(Array.from(t.subarray(i * DIMS, (i + 1) * DIMS)));
      const bodies = {
        json: JSON.stringify({ source: { embedding: source }, targets: asJson, model_name: 'Dlib', top_k: 1 }),
        b64: JSON.stringify({ source: { embedding: source }, targets_b64: Buffer.from(t.buffer, t.byteOffset, t.byteLength).toString('base64'), model_name: 'Dlib', top_k: 1 }),
      };
      const nearest: Record<string, unknown> = {};
      for (const [mode, body] of Object.entries(bodies)) {
        const lat: number[] = [];
        const serverTimes: number[] = [];
        for (let i = 0; i < repeats(n) + 1; i++) {
          const t0 = performance.now();
          const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } });
          const json = (await res.json()) as { results?: Array<{ index: number; distance: number }>; time?: number; error?: string };
          const ms = performance.now() - t0;
          if (res.status !== 200) throw new Error(`/compare ${mode} n=${n} answered ${res.status}: ${JSON.stringify(json).slice(0, 200)}`);
          if (i === 0) {
            nearest[mode] = json.results?.[0];
            continue; // first request warms the parser paths
          }
          lat.push(ms);
          if (typeof json.time === 'number') serverTimes.push(json.time * 1000);
        }
        const s = summarize(lat);
        rows.push({
          n,
          mode,
          body_mb: Math.round((body.length / 2 ** 20) * 10) / 10,
          requests: lat.length,
          p50_ms: s.p50,
          p99_ms: s.p99,
          targets_per_s: n / (s.p50 / 1000),
          body_mb_per_s: body.length / 2 ** 20 / (s.p50 / 1000),
          server_time_p50_ms: serverTimes.length ? summarize(serverTimes).p50 : null,
        });
        ctx.log(`compare ${mode} n=${n}: p50 ${s.p50.toFixed(1)} ms, ${(n / (s.p50 / 1000)).toFixed(0)} targets/s`);
      }
      const a = nearest['json'] as { index: number; distance: number } | undefined;
      const b = nearest['b64'] as { index: number; distance: number } | undefined;
      if (!a || !b || a.index !== b.index || a.distance !== b.distance) ctx.log(`compare n=${n}: WARNING nearest target differs between encodings: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
    }
    const native = nativeRows();
    ctx.table(
      ['n', 'mode', 'body MB', 'p50 ms', 'p99 ms', 'targets/s (HTTP)', 'native kernel targets/s'],
      rows.map((r) => [
        r['n'] as number,
        r['mode'] as string,
        r['body_mb'] as number,
        (r['p50_ms'] as number).toFixed(1),
        (r['p99_ms'] as number).toFixed(1),
        (r['targets_per_s'] as number).toExponential(2),
        native
          .filter((x) => x.n === r['n'] && x.impl !== 'numpy')
          .map((x) => `${x.impl}:${x.vectors_per_s.toExponential(2)}`)
          .join(' ') || '-',
      ]),
    );
    return { dims: DIMS, metric: 'cosine', top_k: 1, rows, native: native.length ? { source: 'bench/results/compare.json', rows: native } : null };
  } finally {
    await ours.stop();
  }
}

/**
 * Where our CPU goes under /verify load, by function: `perf record` of every process of
 * `facecompute serve` (gateway and model server) while a closed-loop /verify load runs, then
 * `perf report` by shared object and by symbol (self time). Linux only, needs `perf` and
 * perf_event_paranoid ≤ 2 for one's own processes.
 *
 *   node --import tsx bench/profile/verify-perf.ts [--model Dlib|Facenet] [--detector opencv] [--seconds 15] [--connections 16]
 *
 * Writes bench/results/profile-verify-<model>-<detector>.txt (the two reports and the command).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { verifyBody } from '../lib/bodies.js';
import { load } from '../lib/load.js';
import { groupPerf } from '../lib/perf.js';
import { RESULTS_DIR } from '../lib/paths.js';
import { logDir, processTree } from '../lib/proc.js';
import { createKey, startOurs } from '../lib/services.js';
import { cpus } from 'node:os';
import { simdInfo } from '../lib/machine.js';

const { values } = parseArgs({ options: { model: { type: 'string', default: 'Dlib' }, detector: { type: 'string', default: 'opencv' }, seconds: { type: 'string', default: '15' }, connections: { type: 'string', default: '16' } } });
const model = values.model as string;
const detector = values.detector as string;
const seconds = Number(values.seconds);
const connections = Number(values.connections);

const ours = await startOurs({ logDir: logDir(), label: 'profile-ours', models: [model] });
try {
  const key = await createKey(ours.consoleUrl);
  const body = verifyBody(detector, model);
  const headers = { authorization: `Bearer ${key}` };
  // Warm: the first requests pay lazy initialisation.
  await load({ url: `${ours.gatewayUrl}/verify`, body, headers, connections, seconds: 3 });
  const data = join(mkdtempSync(join(tmpdir(), 'fc-perf-')), 'perf.data');
  const pids = processTree(ours.proc.pid).join(',');
  // The whole machine, then the service's processes picked out at report time: `-p` fails when
  // one of the service's short-lived threads exits between perf listing and opening it.
  const perf = spawn('perf', ['record', '-F', '499', '-a', '-o', data, '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let perfErr = '';
  perf.stderr.on('data', (d: Buffer) => (perfErr += d.toString()));
  // 'close', not 'exit': perf has written and closed its file and its stderr.
  const closed = new Promise<number | null>((r) => perf.once('close', r));
  const run = await load({ url: `${ours.gatewayUrl}/verify`, body, headers, connections, seconds });
  const code = await closed;
  if (code !== 0) throw new Error(`perf record exited ${code}: ${perfErr.trim().slice(0, 500)}`);
  const report = (sort: string, limit = '0.5') => {
    const r = spawnSync('perf', ['report', '-i', data, '--pid', pids, '--stdio', '--no-children', '--sort', sort, '--percent-limit', limit], { encoding: 'utf8', maxBuffer: 256 << 20 });
    const lines = r.stdout.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    if (lines.length === 0) throw new Error(`perf report gave nothing (exit ${r.status}): ${r.stderr.trim().slice(0, 500)}`);
    return lines.join('\n');
  };
  const bySymbol = report('dso,sym');
  // Grouped over every symbol, not only those above the limit: ONNX Runtime's and V8's time is
  // spread over many small ones.
  const groups = groupPerf(report('dso,sym', '0'));
  const out = [
    `perf profile of facecompute serve (gateway + model server, pids ${pids}) under /verify ${model} ${detector} at c${connections} for ${seconds} s: ${run.ok} answers, ${run.rps.toFixed(2)} req/s`,
    `command: node --import tsx bench/profile/verify-perf.ts --model ${model} --detector ${detector} --seconds ${seconds} --connections ${connections}`,
    `date: ${new Date().toISOString()}, load average: ${spawnSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).stdout.trim()}`,
    '',
    '== by shared object (self time, samples of all threads)',
    report('comm,dso'),
    '',
    '== by symbol (self time)',
    bySymbol,
    '',
    `== grouped (percent of all samples, every symbol; ${groups.listed}% attributed)`,
    ...Object.entries(groups.shares).map(([k, v]) => `${k}: ${v}%`),
    '',
  ].join('\n');
  const path = join(RESULTS_DIR, `profile-verify-${model}-${detector}.txt`);
  writeFileSync(path, out);
  writeFileSync(path.replace(/\.txt$/, '.json'), `${JSON.stringify({ model, detector, connections, seconds, answers: run.ok, rps: run.rps, ran_at: new Date().toISOString(), cpu: cpus()[0]?.model ?? 'unknown', simd: simdInfo(), loadavg: spawnSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).stdout.trim(), ...groups }, null, 1)}\n`);
  process.stdout.write(`${out}\nwrote ${path}\n`);
} finally {
  await ours.stop();
}

/**
 * Does throughput or CPU per request get worse from c4 to c16? Ours alone (no baseline to share the
 * cores with), the service suite's /verify body (opencv), each model at c4 and c16 in turn, for several
 * rounds; the order of the two levels alternates by round. Each cell: requests/s, latency, CPU time of
 * serve's process tree per answered request, and the load generator's own CPU per request (it shares
 * the cores). Writes bench/results/concurrency.json.
 *   npm run build:ts && node --import ./test/setup/loopback-only.mjs --import tsx bench/scaling/concurrency.ts [--rounds 3] [--seconds 20]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { verifyBody } from '../lib/bodies.js';
import { load, postJson } from '../lib/load.js';
import { settle } from '../lib/proc.js';
import { BENCH_MODELS, createKey, startOurs } from '../lib/services.js';
import { machineInfo } from '../lib/machine.js';
import { REPO_ROOT } from '../lib/paths.js';
import { measured } from '../suites/service.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '20' } } });
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const LEVELS = [4, 16];

const ours = await startOurs({ logDir: mkdtempSync(join(tmpdir(), 'concurrency-')), label: 'concurrency', models: BENCH_MODELS });
const key = await createKey(ours.consoleUrl);
const url = `${ours.gatewayUrl}/verify`;
const headers = { authorization: `Bearer ${key}` };
const cells: Array<Record<string, unknown>> = [];
try {
  for (let round = 1; round <= rounds; round++) {
    for (const model of ours.models) {
      const body = verifyBody('opencv', model);
      for (let i = 0; i < 3; i++) if ((await postJson(url, body, headers)).status !== 200) throw new Error(`${model}: /verify refused`);
      for (const c of round % 2 ? LEVELS : [...LEVELS].reverse()) {
        await settle(ours.proc.pid);
        const gen0 = process.cpuUsage();
        const cell = await measured(ours.proc.pid, () => load({ url, body, headers, connections: c, seconds }));
        const gen = process.cpuUsage(gen0);
        const row = {
          round,
          model,
          connections: c,
          rps: Number(cell.rps.toFixed(2)),
          p50_ms: cell.p50_ms,
          p99_ms: cell.p99_ms,
          non2xx: cell.non2xx,
          errors: cell.errors + cell.timeouts,
          cpu_ms_per_request: cell.cpu_ms_per_request && Number(cell.cpu_ms_per_request.toFixed(1)),
          generator_cpu_ms_per_request: cell.ok ? Number(((gen.user + gen.system) / 1000 / cell.ok).toFixed(1)) : null,
        };
        console.log(JSON.stringify(row));
        cells.push(row);
      }
    }
  }
} finally {
  await ours.stop();
}

/** Per model and round: c16 over c4, for throughput and CPU per request. */
const ratios = ours.models.flatMap((model) =>
  Array.from({ length: rounds }, (_, k) => {
    const at = (c: number) => cells.find((r) => r.model === model && r.round === k + 1 && r.connections === c)!;
    const [c4, c16] = [at(4), at(16)] as Array<{ rps: number; cpu_ms_per_request: number }>;
    return { model, round: k + 1, rps_c16_over_c4: Number((c16!.rps / c4!.rps).toFixed(3)), cpu_c16_over_c4: Number((c16!.cpu_ms_per_request / c4!.cpu_ms_per_request).toFixed(3)) };
  }),
);
console.table(ratios);
writeFileSync(
  join(REPO_ROOT, 'bench/results/concurrency.json'),
  `${JSON.stringify({ machine: machineInfo(), seconds_per_cell: seconds, note: 'ours alone; /verify opencv on the service pair; cpu: serve process tree per answered request', cells, ratios }, null, 1)}\n`,
);
process.exit(0);

/**
 * docs/benchmarks.md, the `detectors` suite's bullet: its two tables (mtcnn and fastmtcnn per image,
 * ours against DeepFace; one large image's peak memory with the run limits and without) and the run's
 * date and load state figures of bench/results/bench.json (`suites.detectors`). Each cell is recomputed
 * here with the rounding the page prints (that of bench/report.ts's summary.md), so a rerun that changes
 * them fails until the page says what the run measured.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import type { DetectorRow, LargeImageRow } from '../bench/suites/detectors.js';

interface Suite {
  ran_at: string;
  seconds: number;
  loadavg_during: { min: number; max: number } | null;
  machine: { cpu: string; cores: number };
  result: { images: string[]; rows: DetectorRow[]; large_image?: LargeImageRow[] };
}
const suite = (JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results/bench.json'), 'utf8')) as { suites: { detectors: Suite } }).suites.detectors;
const page = readFileSync(resolve(REPO_ROOT, 'docs/benchmarks.md'), 'utf8');
const start = page.indexOf('- `detectors`:');
const section = page.slice(start, page.indexOf('\n- `service`:', start));

/** The cells of the rows of the table whose header row starts with `header`, by their first cell. */
function table(header: string): Map<string, string[]> {
  const lines = section.split('\n').map((l) => l.trim());
  const at = lines.findIndex((l) => l.startsWith(header));
  const rows = new Map<string, string[]>();
  if (at < 0) return rows;
  for (const line of lines.slice(at + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    rows.set(cells[0]!, cells.slice(1));
  }
  return rows;
}

const fx = (x: number, d: number) => x.toFixed(d);

t.test('the bullet names its results file and the run', async (t) => {
  t.ok(start >= 0 && section.length > 0, 'docs/benchmarks.md has the detectors bullet');
  t.ok(section.includes('`bench/results/bench.json` (`suites.detectors`'), 'it names the results file');
  const when = suite.ran_at.slice(0, 16).replace('T', ' ');
  t.ok(section.includes(`${when} UTC, ${suite.machine.cpu}, ${suite.machine.cores} cores`), `ran ${when} UTC on ${suite.machine.cpu}, ${suite.machine.cores} cores`);
  const load = suite.loadavg_during!;
  t.ok(section.replace(/\s+/g, ' ').includes(`1-minute load ${fx(load.min, 2)}–${fx(load.max, 2)}, ${suite.seconds} s`), `load ${load.min}–${load.max}, ${suite.seconds} s`);
  const rounds = new Set(suite.result.rows.map((r) => `${r.images} images, ${r.reps} rounds`));
  t.equal(rounds.size, 1, 'one image count and round count for both rows');
  t.ok(section.includes([...rounds][0]!), [...rounds][0]!);
});

t.test('the per-image table is the run\'s, row for row', async (t) => {
  const rows = table('| detector | ms/image ours / DeepFace |');
  t.same([...rows.keys()].sort(), suite.result.rows.map((r) => r.detector).sort(), 'one row per measured detector');
  for (const r of suite.result.rows) {
    if (!t.ok(r.deepface && r.speedup !== null && r.cpu_ratio !== null, `${r.detector}: DeepFace was measured`) || !r.deepface) continue;
    t.same(rows.get(r.detector), [
      `${fx(r.ours.ms_per_image, 0)} / ${fx(r.deepface.ms_per_image, 0)}`,
      fx(r.speedup!, 1),
      `${fx(r.ours.cpu_ms_per_image, 0)} / ${fx(r.deepface.cpu_ms_per_image, 0)}`,
      fx(r.cpu_ratio!, 1),
      `${r.ours.faces} / ${r.deepface.faces}`,
    ], `${r.detector}: wall, ×, CPU, ×, faces`);
  }
});

t.test('the large-image table is the run\'s, row for row', async (t) => {
  const large = suite.result.large_image ?? [];
  t.ok(large.length > 0, 'the run measured a large image');
  const rows = table('| detector | image | peak RSS MiB');
  t.same([...rows.keys()].sort(), large.map((r) => r.detector).sort(), 'one row per detector measured');
  for (const r of large) {
    t.same(rows.get(r.detector), [
      `${r.width}x${r.height}`,
      `${fx(r.served.peak_rss_mib, 0)} / ${fx(r.whole.peak_rss_mib, 0)}`,
      fx(r.peak_ratio, 2),
      `${fx(r.served.seconds[0]!, 1)} / ${fx(r.whole.seconds[0]!, 1)}`,
    ], `${r.detector}: size, peak RSS, ×, seconds`);
  }
});

/** Reads `perf report --stdio --sort dso,sym` output into the groups "where we lose" talks about. */
export interface PerfGroups {
  /** Percent of all samples per group, rounded to 0.1. */
  shares: Record<PerfGroup, number>;
  /** Sum of the percentages the report listed (the rest is under its --percent-limit). */
  listed: number;
}

export type PerfGroup = 'haar' | 'onnxruntime' | 'image decode' | 'align and tensor' | 'node and V8' | 'kernel' | 'libc' | 'other';

export function groupOf(dso: string, sym: string): PerfGroup {
  if (sym.includes('detect::haar')) return 'haar';
  if (dso.includes('onnxruntime')) return 'onnxruntime';
  if (/decode_mcu|jpeg|png|inflate|zune|image::codecs|pixels::decode/i.test(sym)) return 'image decode';
  if (dso === 'node' || dso.startsWith('[JIT]') || dso.startsWith('perf-')) return 'node and V8';
  if (dso.includes('kernel')) return 'kernel';
  if (dso.startsWith('libc') || dso.startsWith('libstdc++') || dso.startsWith('libm')) return 'libc';
  if (sym.includes('pixels::') || sym.includes('::align')) return 'align and tensor';
  return 'other';
}

export function groupPerf(report: string): PerfGroups {
  const shares: Record<PerfGroup, number> = { haar: 0, onnxruntime: 0, 'image decode': 0, 'align and tensor': 0, 'node and V8': 0, kernel: 0, libc: 0, other: 0 };
  let listed = 0;
  for (const line of report.split('\n')) {
    // "    51.11%  facecompute.linux-x64-gnu.node  [.] facecompute_core::detect::haar::dense::avx2::scan_row"
    const m = /^\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*)$/.exec(line);
    if (!m) continue;
    const pct = Number(m[1]);
    listed += pct;
    const g = groupOf(m[2] as string, m[3] as string);
    shares[g] += pct;
  }
  // With a --pid filter perf's relative percentages can sum past 100 (about 105); the shares are
  // then scaled to the samples listed, so that they sum to 100.
  const scale = listed > 100 ? 100 / listed : 1;
  for (const k of Object.keys(shares) as PerfGroup[]) shares[k] = Math.round(shares[k] * scale * 10) / 10;
  return { shares, listed: Math.round(listed * 10) / 10 };
}

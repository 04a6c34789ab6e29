/**
 * Minimal SVG charts for the benchmark summary: grouped bars and lines, with axes, labels and a
 * legend. Self-contained files (no fonts or scripts fetched), readable on light backgrounds.
 */
const PALETTE = ['#1f6feb', '#d1242f', '#1a7f37', '#9a6700', '#8250df', '#57606a'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmt(v: number): string {
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  if (v >= 10) return v.toFixed(0);
  return v.toFixed(2);
}

export interface Series {
  name: string;
  values: number[];
}

interface Frame {
  title: string;
  yLabel: string;
  width?: number;
  height?: number;
  logY?: boolean;
}

function frame(f: Frame, categories: string[], series: Series[], body: (x: (i: number) => number, y: (v: number) => number, bandW: number) => string): string {
  const W = f.width ?? 720;
  const H = f.height ?? 380;
  const m = { l: 70, r: 20, t: 40, b: 70 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const all = series.flatMap((s) => s.values).filter((v) => Number.isFinite(v));
  const max = f.logY ? 10 ** Math.ceil(Math.log10(Math.max(...all, 1))) : niceMax(Math.max(...all, 0));
  const min = f.logY ? 10 ** Math.floor(Math.log10(Math.max(Math.min(...all.filter((v) => v > 0)), 1e-9))) : 0;
  const y = (v: number) =>
    f.logY ? m.t + ph - ((Math.log10(Math.max(v, min)) - Math.log10(min)) / (Math.log10(max) - Math.log10(min))) * ph : m.t + ph - (v / max) * ph;
  const band = pw / Math.max(1, categories.length);
  const x = (i: number) => m.l + band * i + band / 2;
  const ticks: number[] = [];
  if (f.logY) for (let v = min; v <= max * 1.0001; v *= 10) ticks.push(v);
  else for (let i = 0; i <= 5; i++) ticks.push((max / 5) * i);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(f.title)}</text>`,
    ...ticks.map((v) => `<line x1="${m.l}" x2="${W - m.r}" y1="${y(v)}" y2="${y(v)}" stroke="#d0d7de"/><text x="${m.l - 6}" y="${y(v) + 4}" text-anchor="end" fill="#57606a">${fmt(v)}</text>`),
    `<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle" fill="#24292f">${esc(f.yLabel)}</text>`,
    ...categories.map((c, i) => `<text x="${x(i)}" y="${m.t + ph + 18}" text-anchor="middle" fill="#24292f">${esc(c)}</text>`),
    body(x, y, band),
    ...series.map(
      (s, i) =>
        `<rect x="${m.l + i * 150}" y="${H - 22}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/><text x="${m.l + i * 150 + 18}" y="${H - 12}">${esc(s.name)}</text>`,
    ),
    `</svg>`,
  ];
  return parts.join('\n');
}

export function barChart(f: Frame, categories: string[], series: Series[]): string {
  return frame(f, categories, series, (x, y, band) => {
    const bw = (band * 0.8) / Math.max(1, series.length);
    const out: string[] = [];
    series.forEach((s, si) =>
      s.values.forEach((v, i) => {
        if (!Number.isFinite(v)) return;
        const left = x(i) - (band * 0.8) / 2 + si * bw;
        const top = y(v);
        const base = y(f.logY ? 0 : 0);
        const h = Math.max(0, (f.logY ? y(Number.MIN_VALUE) : base) - top);
        out.push(`<rect x="${left.toFixed(1)}" y="${top.toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${PALETTE[si % PALETTE.length]}"><title>${esc(`${s.name}: ${fmt(v)}`)}</title></rect>`);
        out.push(`<text x="${(left + bw / 2).toFixed(1)}" y="${(top - 4).toFixed(1)}" text-anchor="middle" font-size="10">${fmt(v)}</text>`);
      }),
    );
    return out.join('\n');
  });
}

export function lineChart(f: Frame, categories: string[], series: Series[]): string {
  return frame(f, categories, series, (x, y) =>
    series
      .map((s, si) => {
        const pts = s.values.map((v, i) => (Number.isFinite(v) ? `${x(i).toFixed(1)},${y(v).toFixed(1)}` : null)).filter(Boolean);
        const color = PALETTE[si % PALETTE.length];
        return [
          `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`,
          ...s.values.map((v, i) => (Number.isFinite(v) ? `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3" fill="${color}"><title>${esc(`${s.name}: ${fmt(v)}`)}</title></circle>` : '')),
        ].join('\n');
      })
      .join('\n'),
  );
}

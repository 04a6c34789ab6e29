/**
 * The Usage page: the account's requests by day over the last 30 days as a chart,
 * by key and by route, what was charged and what was not, the remaining allowance, and the most recent
 * requests with their x-request-id. Server-rendered: the chart is inline SVG (no script, no CDN), its
 * colours come from the page's nonce'd stylesheet.
 */
import type { AccountView, FreeCallLimits } from '../../accounts/index.js';
import type { UsageCounts, UsageReport } from '../../accounts/usage/report.js';
import { html, when, type Html } from './html.js';

const TIER_NAMES: Record<AccountView['tier'], string> = { anonymous: 'anonymous', account: 'account', card: 'account with a card' };

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

function countsText(c: UsageCounts): string {
  return `${plural(c.total, 'request')}: ${c.charged} charged, ${c.refunded} refunded, ${c.refused} refused, ${c.free} free`;
}

const CHART_H = 100;
const BAR_W = 10;

/** One stacked bar per day: charged at the bottom, then refunded, refused and free. */
function chart(r: UsageReport): Html {
  const max = Math.max(1, ...r.days.map((d) => d.total));
  const bars = r.days.map((d, i) => {
    let y = CHART_H;
    const parts = (['charged', 'refunded', 'refused', 'free'] as const).map((k) => {
      const h = (d[k] / max) * CHART_H;
      y -= h;
      return h > 0 ? html`<rect class="bar-${k}" x="${i * BAR_W + 1}" y="${y.toFixed(2)}" width="${BAR_W - 2}" height="${h.toFixed(2)}"></rect>` : '';
    });
    return html`<g data-day="${d.day}" data-total="${d.total}"><title>${d.day}: ${countsText(d)}</title>${parts}</g>`;
  });
  return html`<figure class="chart">
<svg viewBox="0 0 ${r.days.length * BAR_W} ${CHART_H}" preserveAspectRatio="none" role="img" aria-label="Requests per day from ${r.from} to ${r.to}; busiest day ${max}">${bars}</svg>
<div class="chart-axis" aria-hidden="true"><span>${r.from}</span><span>${r.to}</span></div>
<figcaption class="legend"><span class="swatch bar-charged"></span>charged <span class="swatch bar-refunded"></span>refunded <span class="swatch bar-refused"></span>refused (4xx) <span class="swatch bar-free"></span>free</figcaption>
</figure>`;
}

function countCells(c: UsageCounts): Html {
  return html`<td role="cell" data-label="Charged">${c.charged}</td><td role="cell" data-label="Refunded">${c.refunded}</td><td role="cell" data-label="Refused">${c.refused}</td><td role="cell" data-label="Free">${c.free}</td><td role="cell" data-label="Total"><strong>${c.total}</strong></td>`;
}

const COUNT_HEADS = html`<th scope="col" role="columnheader">Charged</th><th scope="col" role="columnheader">Refunded</th><th scope="col" role="columnheader">Refused</th><th scope="col" role="columnheader">Free</th><th scope="col" role="columnheader">Total</th>`;

function breakdown(caption: string, first: string, rows: Array<{ label: Html | string; counts: UsageCounts }>, testid: string): Html {
  if (rows.length === 0) return html`<p class="muted">No requests in the last 30 days.</p>`;
  return html`<table class="stack" role="table" data-testid="${testid}">
<caption class="sr-only">${caption}</caption>
<thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">${first}</th>${COUNT_HEADS}</tr></thead>
<tbody role="rowgroup">${rows.map((r) => html`<tr role="row"><td role="cell" class="name" data-label="${first}"><span>${r.label}</span></td>${countCells(r.counts)}</tr>`)}</tbody>
</table>`;
}

/** An error code that may wrap after its underscores (embedding_dimension_mismatch), never inside a word. */
function breakable(code: string): Html {
  const parts = code.split('_');
  return html`${parts.map((p, i) => (i === 0 ? p : html`_<wbr>${p}`))}`;
}

const OUTCOME_TEXT = { charged: 'charged', refunded: 'refunded', not_charged: 'not charged' } as const;

function recentTable(r: UsageReport): Html {
  if (r.recent.length === 0) return html`<p class="muted">No requests yet. Calls made with your keys appear here within a few seconds.</p>`;
  return html`<table class="stack recent" role="table" data-testid="recent">
<caption class="sr-only">Your most recent requests</caption>
<thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">Time</th><th scope="col" role="columnheader">Key</th><th scope="col" role="columnheader">Route</th><th scope="col" role="columnheader">Status</th><th scope="col" role="columnheader">Error</th><th scope="col" role="columnheader">Duration</th><th scope="col" role="columnheader">Request id</th></tr></thead>
<tbody role="rowgroup">
${r.recent.map(
  (x) => html`<tr role="row" data-request-id="${x.request_id}">
<td role="cell" data-label="Time">${when(x.at)}</td>
<td role="cell" class="name" data-label="Key"><span>${x.key_name ?? '(deleted key)'}</span></td>
<td role="cell" class="nowrap" data-label="Route"><code>${x.route}</code>${x.surface === 'mcp' ? html` <span class="badge">MCP</span>` : ''}</td>
<td role="cell" data-label="Status">${x.status} <span class="badge${x.outcome === 'charged' ? ' active' : ''}">${OUTCOME_TEXT[x.outcome]}</span></td>
<td role="cell" class="words" data-label="Error">${x.error ? html`<code>${breakable(x.error)}</code>` : '—'}</td>
<td role="cell" data-label="Duration">${x.duration_ms < 10 ? x.duration_ms.toFixed(1) : Math.round(x.duration_ms)}&nbsp;ms</td>
<td role="cell" class="name" data-label="Request id"><code>${x.request_id}</code></td>
</tr>`,
)}
</tbody>
</table>`;
}

export function usagePage(a: AccountView, r: UsageReport, limits: FreeCallLimits): Html {
  const fc = a.free_calls;
  const keys = r.by_key.map((k) => ({
    label: html`${k.name ?? '(deleted key)'}${k.kind === 'mcp' ? html` <span class="badge">MCP</span>` : ''}${k.revoked ? html` <span class="badge revoked">Revoked</span>` : ''}`,
    counts: k,
  }));
  const routes = r.by_route.map((x) => ({ label: html`<code>${x.route}</code>`, counts: x }));
  return html`<h1>Usage</h1>
<section class="card" aria-labelledby="allowance-h"><h2 id="allowance-h">Free calls</h2>
<p data-testid="allowance"><strong>${fc.remaining.toLocaleString('en-US')}</strong> of ${fc.total.toLocaleString('en-US')} left (${TIER_NAMES[a.tier]}).</p>
<progress max="${Math.max(1, fc.total)}" value="${fc.used}" aria-label="Free calls used">${fc.used} used</progress>
<p class="muted">Tiers: anonymous ${limits.anonymous}, account ${limits.account}, with a card ${limits.card}. A call is charged only when compute ran (a result, or no face found); refusals (4xx) and failures on our side are not.</p>
</section>
<section class="card" aria-labelledby="days-h"><h2 id="days-h">Last 30 days</h2>
<p data-testid="totals">${countsText(r.totals)}.</p>
${chart(r)}
</section>
<section class="card" aria-labelledby="keys-h"><h2 id="keys-h">By key</h2>${breakdown('Requests by key', 'Key', keys, 'by-key')}</section>
<section class="card" aria-labelledby="routes-h"><h2 id="routes-h">By route</h2>${breakdown('Requests by route or MCP tool', 'Route', routes, 'by-route')}</section>
<section class="card" aria-labelledby="recent-h"><h2 id="recent-h">Recent requests</h2>
<p class="muted">The last ${r.recent.length === 100 ? '100' : plural(r.recent.length, 'request')}, newest first, UTC. Quote the request id when you ask us about a call.</p>
${recentTable(r)}
</section>`;
}

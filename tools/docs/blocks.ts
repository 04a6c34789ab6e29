/**
 * Every generated block of the documentation, by name: the parity figures (tools/parity/figures.ts,
 * rendered from the results files), the adversary suite's table (bench/results/adversary.json), the error table (src/errors: codes, statuses, the catalog and the
 * charging rule) and the configuration table (src/config/spec.ts). A block is the text between
 * `<!-- NAME:start -->` and `<!-- NAME:end -->` in README.md or a docs/*.md page;
 *
 *   node --import tsx scripts/update-readme-figures.ts
 *
 * renders them all, and test/readme-figures.test.ts fails when a block differs from its rendering or
 * is not in exactly one document.
 */
import { configDocs } from '../../src/config/index.js';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors/codes.js';
import { ERROR_DOCS } from '../../src/errors/catalog.js';
import { consumesCall } from '../../src/accounts/charging.js';
import { BLOCKS as PARITY_BLOCKS, documents } from '../parity/figures.js';
import { adversaryTable } from './adversary.js';

export { documents };

/** A table cell: no line breaks, no unescaped pipes. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** docs/errors.md's table: every code of src/errors/codes.ts, in its order. */
export function errorsTable(): string {
  const rows = (Object.keys(ERROR_STATUS) as ErrorCode[]).map((code) => {
    const d = ERROR_DOCS[code];
    const status = ERROR_STATUS[code];
    const compute = d.surfaces.some((s) => s === 'REST' || s === 'MCP');
    const charged = compute ? (consumesCall(status, code) ? '**yes**' : 'no') : '—';
    return `| \`${code}\` | ${status} | ${d.surfaces.join(', ')} | ${cell(d.when)} | ${d.retry} | ${charged} | ${cell(d.action)} |`;
  });
  return ['| Code | Status | Where | When | Retry | Charged | What to do |', '|---|---|---|---|---|---|---|', ...rows].join('\n');
}

export const BLOCKS: Record<string, () => string> = {
  ...PARITY_BLOCKS,
  'adversary-table': adversaryTable,
  'errors-table': errorsTable,
  'configuration-table': configDocs,
};

const BLOCK_RE = /<!-- ([a-z0-9-]+):start -->\n([\s\S]*?)\n<!-- \1:end -->/g;

/** The blocks a document holds, by name, with their current text. */
export function blocksIn(text: string): Array<{ name: string; body: string }> {
  return [...text.matchAll(BLOCK_RE)].map((m) => ({ name: m[1]!, body: m[2]! }));
}

/** The document with every known block rendered afresh; unknown block names are an error. */
export function render(text: string): string {
  return text.replace(BLOCK_RE, (_all, name: string) => {
    const f = BLOCKS[name];
    if (!f) throw new Error(`unknown generated block ${name}`);
    return `<!-- ${name}:start -->\n${f()}\n<!-- ${name}:end -->`;
  });
}

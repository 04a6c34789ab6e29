/**
 * The documentation's generated blocks (tools/docs/blocks.ts) are renderings of their sources: the
 * parity tables and figure sentences of the results files and fixtures they quote, the error table of
 * src/errors, the configuration table of src/config/spec.ts. A block edited by hand, or a source changed
 * without `node --import tsx scripts/update-readme-figures.ts`, fails here. The parity tests hold the results
 * files to what CI measures; together, a README figure that stops being true fails one or the other.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../tools/parity/figures.js';
import { BLOCKS, blocksIn, documents } from '../tools/docs/blocks.js';

const docs = documents().map((doc) => ({ doc, blocks: blocksIn(readFileSync(join(REPO, doc), 'utf8')) }));

t.test('every block is where the documents say, once', async (t) => {
  const seen = docs.flatMap(({ doc, blocks }) => blocks.map((b) => `${b.name} in ${doc}`));
  for (const name of Object.keys(BLOCKS)) {
    const where = seen.filter((s) => s.startsWith(`${name} in `));
    t.equal(where.length, 1, `${name}: once across ${documents().join(', ')} (${where.join('; ') || 'nowhere'})`);
  }
  for (const { doc, blocks } of docs) for (const b of blocks) t.ok(b.name in BLOCKS, `${doc}: ${b.name} is a known block`);
});

t.test('each block is its results file, rendered', async (t) => {
  for (const { doc, blocks } of docs) {
    for (const b of blocks) {
      const render = BLOCKS[b.name];
      if (!render) continue;
      t.equal(b.body, render(), `${doc}: ${b.name} (run: node --import tsx scripts/update-readme-figures.ts)`);
    }
  }
});

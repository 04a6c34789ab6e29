// Rewrites the parity tables and figure sentences in README.md (and docs/*.md) from the results files
// and fixtures they quote (tools/parity/figures.ts); test/readme-figures.test.ts keeps them in sync.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, documents, render } from '../tools/parity/figures.js';

for (const doc of documents()) {
  const path = join(REPO, doc);
  const text = readFileSync(path, 'utf8');
  const next = render(text);
  if (next !== text) {
    writeFileSync(path, next);
    console.log(`updated ${doc}`);
  }
}

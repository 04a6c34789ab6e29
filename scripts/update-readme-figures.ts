// Rewrites every generated block in README.md and docs/*.md (tools/docs/blocks.ts): the parity tables
// and figure sentences from the results files and fixtures they quote, the error table from src/errors,
// the configuration table from src/config/spec.ts. test/readme-figures.test.ts keeps them in sync.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../tools/parity/figures.js';
import { documents, render } from '../tools/docs/blocks.js';

for (const doc of documents()) {
  const path = join(REPO, doc);
  const text = readFileSync(path, 'utf8');
  const next = render(text);
  if (next !== text) {
    writeFileSync(path, next);
    console.log(`updated ${doc}`);
  }
}

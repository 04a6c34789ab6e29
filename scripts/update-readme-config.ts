// Rewrites the configuration table in README.md from src/config/spec.ts (test/config.test.ts keeps them in sync).
import { readFileSync, writeFileSync } from 'node:fs';
import { configDocs } from '../src/config/index.js';

const path = new URL('../README.md', import.meta.url);
const readme = readFileSync(path, 'utf8');
const start = readme.indexOf('| Variable | Default | Meaning |');
if (start < 0) throw new Error('README has no configuration table');
let end = readme.indexOf('\n\n', start);
if (end < 0) end = readme.length;
writeFileSync(path, readme.slice(0, start) + configDocs() + readme.slice(end));

#!/usr/bin/env node
// Entry point of the `facecompute` command. Prefers the bundled build (dist/bundle: a few modules
// instead of a thousand files, which halves the time to load the service), then the tsc build
// (dist/src), then the TypeScript sources through tsx (a development checkout that was never built).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundled = join(root, 'dist', 'bundle', 'main.js');
const compiled = join(root, 'dist', 'src', 'cli', 'main.js');
if (existsSync(bundled)) {
  await import(pathToFileURL(bundled).href);
} else if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}

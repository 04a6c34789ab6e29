/**
 * The addon built with the cargo feature `bench` (`npm run build:native:bench`, into bench/native/):
 * the product's addon plus the yardsticks and single pixel steps of crates/facecompute-node/src/bench.rs, which the shipped
 * addon (`npm run build:native`, the package root's index.js) leaves out. Only bench/ and the tests of
 * those yardsticks (test/compare.test.ts, test/image.test.ts) load it; src/ cannot (its typings, index.d.ts, do not declare them).
 */
import { createRequire } from 'node:module';
import type * as BenchBinding from '../native/index.js';

const require = createRequire(import.meta.url);

function load(): typeof BenchBinding {
  try {
    return require('../native/index.js') as typeof BenchBinding;
  } catch (err) {
    throw new Error(`the bench addon is not built: run \`npm run build:native:bench\` (bench/native/): ${(err as Error).message}`, { cause: err });
  }
}

export const benchNative: typeof BenchBinding = load();

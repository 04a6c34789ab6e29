/**
 * `npm run build:bundle`: the service's JavaScript as a few ES modules in dist/bundle/, which
 * bin/facecompute.js prefers to dist/src/. Why: Node 20 has no compile cache, and loading the
 * unbundled tree (kysely, undici, the MCP SDK, fastify: over a thousand small files) was the
 * critical path of a cold start, about 0.45 s of the 0.8 s to /readiness. One module per command
 * (code splitting) keeps `model-server` from loading the gateway's dependencies and vice versa.
 *
 * Left outside the bundle: packages with native addons (loaded by path at run time) and the
 * benchmarks (development code, loaded from dist/bench by the `bench` command).
 */
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'bundle');

const EXTERNAL = [
  'better-sqlite3', // native addon, found through `bindings`
  'onnxruntime-node', // native addon and its shared libraries beside it
  '@node-rs/argon2', // native addon, chosen per platform at load
  'pg-native', // pg's optional native client, required lazily and absent here
  '*.node',
];

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  // Flat names: the inference thread is started as ./inference-worker.js beside the chunk that
  // starts it (src/model-server/inference/inference-thread.ts).
  entryPoints: {
    main: join(root, 'src', 'cli', 'main.ts'),
    'inference-worker': join(root, 'src', 'model-server', 'inference', 'inference-worker.ts'),
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  sourcemap: true,
  metafile: true,
  logLevel: 'warning',
  // CommonJS dependencies call require() for Node built-ins; an ES module has none, so give it one.
  banner: { js: "import { createRequire as __fcCreateRequire } from 'node:module'; const require = __fcCreateRequire(import.meta.url);" },
});
const bytes = Object.values(result.metafile.outputs).reduce((s, o) => s + o.bytes, 0);
process.stdout.write(`bundle: ${Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length} modules, ${(bytes / 1e6).toFixed(1)} MB in dist/bundle\n`);

/**
 * The install claims of README.md and docs/install.md, checked against what they describe: the
 * container quickstart (docs/install.md) against
 * the Dockerfile (the data volume at the image's data directory, the ports it exposes, the variables the
 * service knows, the models it bakes), the prerequisites against package.json and the Dockerfile, the
 * README's prerequisites against package.json and the Dockerfile, the sample images against their size
 * and licence (README), and docs/install.md's timing table against the measured figures in
 * bench/results/bootstrap-timing.json (measured by bench/bootstrap/time-fresh-clone.sh, not in a test:
 * it needs the registries).
 */
import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { shellBlocks } from './helpers/doc-blocks.js';
import { VARS } from '../src/config/spec.js';

const README = readFileSync(resolve(REPO_ROOT, 'README.md'), 'utf8');
/** The container quickstart and the timing table moved to docs/install.md; the prerequisites and the samples stay in the README. */
const INSTALL = readFileSync(resolve(REPO_ROOT, 'docs/install.md'), 'utf8');
const DOCKERFILE = readFileSync(resolve(REPO_ROOT, 'Dockerfile'), 'utf8');
const PKG = JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { version: string; engines: { node: string } };

/** The runtime (default, last) stage of the Dockerfile. */
const runtimeStage = DOCKERFILE.slice(DOCKERFILE.lastIndexOf('\nFROM '));
const runtimeEnv = (name: string) => new RegExp(`\\b${name}=(\\S+)`).exec(runtimeStage)?.[1];

t.test("docs/install.md's container quickstart runs the image as the Dockerfile builds it", async (t) => {
  const block = shellBlocks(INSTALL, 'docs/install.md').find((b) => /^docker run /m.test(b.code));
  if (!t.ok(block, 'docs/install.md has a docker run block') || !block) return;
  const code = block.code.replace(/\\\n\s*/g, ' ');
  t.match(code, new RegExp(`docker build -t facecompute:${PKG.version.replace(/\./g, '\\.')} \\.`), 'the build is tagged with the package version');
  const run = /docker run (.*)/.exec(code)?.[1] ?? '';
  t.match(run, new RegExp(`facecompute:${PKG.version.replace(/\./g, '\\.')}\\s*$`), 'it runs that tag');
  const dataDir = runtimeEnv('FACECOMPUTE_DATA_DIR');
  t.equal(dataDir, '/var/lib/facecompute', "the image's data directory");
  t.match(run, new RegExp(`-v \\S+:${dataDir}\\b`), 'the accounts volume is mounted at the data directory');
  t.equal(runtimeEnv('FACECOMPUTE_HOST'), '0.0.0.0', 'the image listens on all addresses, as docs/install.md says');
  t.equal(runtimeEnv('HOME'), '/tmp', 'HOME is /tmp, which --tmpfs /tmp keeps writable under --read-only');
  t.match(run, /--read-only --tmpfs \/tmp/);
  const exposed = new Set((/^EXPOSE (.*)$/m.exec(runtimeStage)?.[1] ?? '').split(/\s+/));
  const published = [...run.matchAll(/-p \d+:(\d+)/g)].map((m) => m[1]!);
  t.same(published, ['8080', '8081', '8082'], 'the gateway, MCP and console ports are published');
  for (const p of published) t.ok(exposed.has(p), `the image exposes ${p}`);
  const known = new Set<string>(VARS.map((v) => v.name));
  const vars = [...run.matchAll(/-e (\w+)=/g)].map((m) => m[1]!);
  t.ok(vars.includes('FACECOMPUTE_PUBLIC_BASE_URL'), 'FACECOMPUTE_PUBLIC_BASE_URL is set');
  for (const v of vars) t.ok(known.has(v), `${v} is a variable the service knows (it refuses unknown ones)`);
  const baked = /ARG FC_IMAGE_MODELS="([^"]+)"/.exec(DOCKERFILE)?.[1];
  t.equal(baked, 'Facenet Dlib opencv retinaface yunet', 'the image bakes the defaults');
  t.match(INSTALL, /The image bakes Facenet, Dlib, opencv, retinaface and yunet/, 'and docs/install.md says which');
  const bootstrap = readFileSync(resolve(REPO_ROOT, 'scripts/bootstrap.sh'), 'utf8');
  t.equal(/DEFAULT_MODELS=\(([^)]+)\)/.exec(bootstrap)?.[1], baked, 'bootstrap.sh serve fetches the same list');
});

t.test('the prerequisites name what the build uses', async (t) => {
  // Rust: the README's minimum is Cargo.toml's rust-version, and the image builds with that or newer.
  const rustMin = /^rust-version = "(\d+\.\d+)"/m.exec(readFileSync(resolve(REPO_ROOT, 'Cargo.toml'), 'utf8'))?.[1];
  const rustImage = /^FROM rust:(\d+\.\d+)/m.exec(DOCKERFILE)?.[1];
  t.ok(rustMin && README.includes(`| Rust ${rustMin} or newer (\`Cargo.toml\`'s \`rust-version\``), `README: Rust ${rustMin} or newer, Cargo.toml's rust-version`);
  const ver = (v: string) => v.split('.').map(Number) as [number, number];
  t.ok(rustMin && rustImage && (ver(rustImage)[0] > ver(rustMin)[0] || ver(rustImage)[1] >= ver(rustMin)[1]), `the image's Rust ${rustImage} is at least ${rustMin}`);
  // Node: one supported major, the one CI runs (this process), engines' floor, and the route bootstrap takes.
  const major = Number(process.versions.node.split('.')[0]);
  t.equal(PKG.engines.node, `>=${major}`, `engines is >=${major}, the Node this suite runs on`);
  t.ok(README.includes(`| Node.js ${major} with npm (\`engines\` is \`${PKG.engines.node}\`; CI runs ${major})`), `README: Node.js ${major}, engines ${PKG.engines.node}, CI ${major}`);
  const bootstrapText = readFileSync(resolve(REPO_ROOT, 'scripts/bootstrap.sh'), 'utf8');
  t.match(bootstrapText, new RegExp(`NODE_MAJOR=${major}\\b`), `bootstrap.sh requires Node ${major}`);
  t.match(bootstrapText, /npm install -g [^\n]*"node@\$NODE_MAJOR"/, 'and installs it from the npm registry when older');
  t.ok(README.includes(`sudo npm install -g node@${major}`), 'the README gives the same route');
  for (const tool of ['build-essential', 'pkg-config', 'cmake', 'nasm', 'python3-venv', 'curl', 'jq']) {
    t.match(readFileSync(resolve(REPO_ROOT, 'scripts/bootstrap.sh'), 'utf8'), new RegExp(`APT_PACKAGES=\\([^)]*\\b${tool}\\b`), `serve installs ${tool}`);
  }
});

t.test('samples/: three small photos and their licence', async (t) => {
  const dir = resolve(REPO_ROOT, 'samples');
  t.same(readdirSync(dir).filter((f) => f.endsWith('.jpg')).sort(), ['img1.jpg', 'img2.jpg', 'img3.jpg']);
  for (const f of ['img1.jpg', 'img2.jpg', 'img3.jpg']) {
    const size = statSync(resolve(dir, f)).size;
    t.ok(size >= 28_000 && size <= 36_999, `${f} is ${size} bytes: within the README's "28-36 KB each"`);
    t.same([...readFileSync(resolve(dir, f)).subarray(0, 3)], [0xff, 0xd8, 0xff], `${f} is a JPEG`);
  }
  t.match(README, /28-36 KB each, from\s+face_recognition's examples under its MIT licence, `samples\/LICENSE`/);
  const licence = readFileSync(resolve(dir, 'LICENSE'), 'utf8');
  t.match(licence, /^\s*MIT License/);
  t.match(licence, /Adam Geitgey/);
  t.match(licence, /Permission is hereby granted, free of charge, to any person obtaining a copy/);
});

interface Timing {
  measured: string;
  machine: string;
  command: string;
  runs: Record<string, { load: string; steps: Array<{ step: string; seconds: number }>; readiness_seconds: number }>;
}

t.test("docs/install.md's timing table is the measured one", async (t) => {
  const timing = JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results/bootstrap-timing.json'), 'utf8')) as Timing;
  const cold = timing.runs['cold'];
  const warm = timing.runs['warm'];
  if (!t.ok(cold && warm, 'a cold and a warm run') || !cold || !warm) return;
  for (const { step, seconds } of cold.steps) {
    const w = warm.steps.find((s) => s.step === step);
    const row = INSTALL.split('\n').find((l) => l.startsWith(`| ${step} |`));
    if (!t.ok(row, `docs/install.md has the row "${step}"`) || !row) continue;
    const cells = row.split('|').map((c) => c.trim());
    t.equal(cells[2], `${seconds} s`, `${step}: ${seconds} s with empty package caches`);
    t.equal(cells[3], w ? `${w.seconds} s` : '—', `${step}: warm caches`);
  }
  const total = INSTALL.split('\n').find((l) => l.startsWith('| fresh clone to `/readiness` 200 |'));
  t.ok(total?.includes(`| ${cold.readiness_seconds} s |`) && total.includes(`| ${warm.readiness_seconds} s |`), `the totals: ${cold.readiness_seconds} s and ${warm.readiness_seconds} s`);
  const flat = INSTALL.replace(/\s+/g, ' ');
  t.ok(flat.includes(cold.load) && flat.includes(warm.load), 'with the load averages they were measured at');
  // The README's first-hour figure: the cold run's, in minutes and seconds, with its results file.
  const readme = README.replace(/\s+/g, ' ');
  t.ok(readme.includes(`after about ${Math.round(cold.readiness_seconds / 60)} minutes (${cold.readiness_seconds} s, \`bench/results/bootstrap-timing.json\``), `README: about ${Math.round(cold.readiness_seconds / 60)} minutes (${cold.readiness_seconds} s), from bench/results/bootstrap-timing.json`);
});

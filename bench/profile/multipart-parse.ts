/**
 * The multipart parse alone, in one process, without HTTP: a 100,000 × 128 /compare body (49 MB) fed
 * in 64 KiB chunks, as the socket delivers it, to (a) busboy (@fastify/busboy, what @fastify/multipart
 * uses) with the targets part copied into one preallocated buffer, as the gateway did, and (b) our
 * reader (src/gateway/multipart-reader.ts). Then the comparison too (cosine, top_k 10): `reader+compare`
 * reads the part into one buffer and then runs compareOneToMany on it (the buffered path of /compare),
 * `streamed` compares each chunk's rows as it is read (src/native/compare-stream.ts, the streaming path).
 * Interleaved rounds; best and median CPU ms (all threads) per body, and wall ms for the last two.
 * --skew k pads the source field by k bytes, which moves the targets' alignment within the chunks (the
 * streaming path copies a chunk's rows to aligned memory when they are not 4-byte aligned).
 *
 *   node --import tsx bench/profile/multipart-parse.ts [--rounds 15] [--n 100000] [--skew 0]
 */
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { parseArgs } from 'node:util';
import { Busboy } from '@fastify/busboy';
import { readMultipart } from '../../src/gateway/multipart-reader.js';
import { compareOneToMany } from '../../src/native/compare.js';
import { TargetStream } from '../../src/native/compare-stream.js';
import { loadAverage } from '../lib/proc.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '15' }, n: { type: 'string', default: '100000' }, skew: { type: 'string', default: '0' } } });
const N = Number(values.n);
const DIMS = 128;
const BOUNDARY = 'facecompute-bench-boundary';
const t = new Float32Array(N * DIMS);
let s = N >>> 0;
for (let i = 0; i < t.length; i++) {
  s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
  t[i] = Math.round(((s / 2 ** 32) * 0.6 - 0.3) * 1e6) / 1e6;
}
const query = new Float32Array(DIMS).fill(0.1);
const head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="source"\r\n\r\n{"embedding":[${Array(DIMS).fill(0.1).join(',')}]}${' '.repeat(Number(values.skew))}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="top_k"\r\n\r\n10\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="targets"; filename="targets.f32"\r\nContent-Type: application/octet-stream\r\n\r\n`;
const body = Buffer.concat([Buffer.from(head), Buffer.from(t.buffer), Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
const CHUNK = 64 * 1024;

/** A fresh copy of each chunk, as node:http hands them over. */
function source(): Readable {
  let at = 0;
  return new Readable({
    read() {
      if (at >= body.length) return void this.push(null);
      this.push(Buffer.from(body.subarray(at, Math.min(body.length, at + CHUNK))));
      at += CHUNK;
    },
  });
}

const pooled = Buffer.allocUnsafeSlow(body.length);

async function viaBusboy(): Promise<number> {
  return new Promise((resolve, reject) => {
    const bb = new Busboy({ headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, limits: { fileSize: Infinity } });
    let got = 0;
    bb.on('file', (_name: string, file: Readable) => {
      file.on('data', (c: Buffer) => {
        c.copy(pooled, got);
        got += c.length;
      });
    });
    bb.on('field', () => undefined);
    bb.on('finish', () => resolve(got));
    bb.on('error', reject);
    source().pipe(bb);
  });
}

/** The targets part, read by our reader into the pooled buffer (the buffered /compare path). */
async function readTargets(): Promise<Buffer> {
  const parts = await readMultipart(source() as unknown as IncomingMessage, {
    boundary: BOUNDARY,
    maxBytes: body.length + 1,
    isFile: (h) => h.filename !== undefined,
    onPart: (h) => (h.name === 'targets' ? { kind: 'contiguous', limit: body.length, sizeHint: body.length, tooLarge: () => new Error('big') as never } : { kind: 'collect', limit: 1 << 20, tooLarge: () => new Error('big') as never }),
    alloc: (n) => pooled.subarray(0, n),
    release: () => undefined,
  });
  return parts.find((p) => p.head.name === 'targets')!.bytes;
}

async function viaReader(): Promise<number> {
  return (await readTargets()).length;
}

async function readerThenCompare(): Promise<number> {
  const bytes = await readTargets();
  const r = await compareOneToMany(query, new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4), DIMS, 'cosine', 10);
  nearest.push(r.indices[0]!);
  return bytes.length;
}

async function streamed(): Promise<number> {
  let s: TargetStream | undefined;
  await readMultipart(source() as unknown as IncomingMessage, {
    boundary: BOUNDARY,
    maxBytes: body.length + 1,
    isFile: (h) => h.filename !== undefined,
    onPart: (h) => {
      if (h.name !== 'targets') return { kind: 'collect', limit: 1 << 20, tooLarge: () => new Error('big') as never };
      const stream = new TargetStream({ sources: query, dims: DIMS, metric: 'cosine', topK: 10, maxRows: N }, Buffer.from(`\r\n--${BOUNDARY}`));
      s = stream;
      return { kind: 'stream', feed: (c) => stream.feed(c) };
    },
    alloc: (n) => pooled.subarray(0, n),
    release: () => undefined,
  });
  const bytes = s!.byteLength;
  nearest.push(s!.finish(10).indices[0]!);
  return bytes;
}
const nearest: number[] = [];

/** The floor: the chunks alone, and the chunks copied into one buffer. */
async function drain(copy: boolean): Promise<number> {
  let got = 0;
  for await (const c of source()) {
    if (copy) (c as Buffer).copy(pooled, got);
    got += (c as Buffer).length;
  }
  return t.byteLength;
}

const times = { chunks: [] as number[], 'chunks+copy': [] as number[], busboy: [] as number[], reader: [] as number[], 'reader+compare': [] as number[], streamed: [] as number[] };
const walls = { 'reader+compare': [] as number[], streamed: [] as number[] };
for (let r = 0; r < Number(values.rounds); r++) {
  for (const [name, f] of [['chunks', () => drain(false)], ['chunks+copy', () => drain(true)], ['busboy', viaBusboy], ['reader', viaReader], ['reader+compare', readerThenCompare], ['streamed', streamed]] as const) {
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    const got = await f();
    const c = process.cpuUsage(c0);
    if (name === 'reader+compare' || name === 'streamed') walls[name].push(performance.now() - w0);
    if (got !== t.byteLength) throw new Error(`${name} read ${got} bytes, expected ${t.byteLength}`);
    times[name].push((c.user + c.system) / 1000);
  }
}
if (new Set(nearest).size !== 1) throw new Error(`the two paths disagree on the nearest target: ${[...new Set(nearest)].join(', ')}`);
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
process.stdout.write(`${(body.length / 2 ** 20).toFixed(1)} MB body in ${CHUNK >> 10} KiB chunks, ${values.rounds} interleaved rounds, load ${loadAverage().join(' ')}; CPU ms per body:\n`);
for (const [name, a] of Object.entries(times)) process.stdout.write(`  ${name.padEnd(14)} best ${Math.min(...a).toFixed(1)}  median ${med(a).toFixed(1)}\n`);
process.stdout.write('wall ms per body (chunks delivered as fast as they are read):\n');
for (const [name, a] of Object.entries(walls)) process.stdout.write(`  ${name.padEnd(14)} best ${Math.min(...a).toFixed(1)}  median ${med(a).toFixed(1)}\n`);

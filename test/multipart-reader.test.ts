/**
 * The streaming multipart reader of /compare (src/gateway/multipart-reader.ts), in process: bodies
 * cut into chunks at every position (a delimiter split across chunks), random bodies against a model
 * of the grammar (fast-check), preamble and epilogue, transport padding, parts in any order, and
 * the broken ones: bare LF line endings, a missing closing delimiter, a truncated body, a client that
 * goes away, headers too long, too many parts, and limits that must refuse before the body is read
 * in full. About 2 s.
 */
import t from 'tap';
import fc from 'fast-check';
import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { boundaryOf, readMultipart, type PartHead, type PartSink, type ReadPart } from '../src/gateway/multipart-reader.js';
import { ServiceError } from '../src/errors/index.js';
import { TargetStream } from '../src/native/compare-stream.js';
import { compareManyToMany } from '../src/native/compare.js';

const B = 'XyZ-boundary-42';

interface Part {
  name: string;
  filename?: string;
  type?: string;
  content: Buffer;
}

function body(parts: Part[], o: { preamble?: string; epilogue?: string; padding?: string; close?: boolean } = {}): Buffer {
  const out: Buffer[] = [];
  if (o.preamble !== undefined) out.push(Buffer.from(`${o.preamble}\r\n`));
  for (const p of parts) {
    const disp = `Content-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`;
    out.push(Buffer.from(`--${B}${o.padding ?? ''}\r\n${disp}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`), p.content, Buffer.from('\r\n'));
  }
  if (o.close !== false) out.push(Buffer.from(`--${B}--${o.epilogue !== undefined ? `\r\n${o.epilogue}` : ''}`));
  return Buffer.concat(out);
}

/**
 * A request stream that hands `buf` over in chunks of the given sizes (cycled), one per macrotask as
 * a socket does, so that a refusal is seen before the next chunk; counts what it gave.
 */
function stream(buf: Buffer, sizes: number[] = [64 * 1024], o: { abortAt?: number } = {}): IncomingMessage & { given: () => number } {
  let at = 0;
  let i = 0;
  const r = new Readable({
    read() {
      setImmediate(() => {
        if (o.abortAt !== undefined && at >= o.abortAt) return void this.destroy();
        if (at >= buf.length) return void this.push(null);
        const n = Math.max(1, sizes[i++ % sizes.length]!);
        this.push(Buffer.from(buf.subarray(at, Math.min(buf.length, at + n))));
        at += n;
      });
    },
  }) as unknown as IncomingMessage & { given: () => number };
  Object.defineProperty(r, 'complete', { get: () => at >= buf.length });
  r.given = () => Math.min(at, buf.length);
  return r;
}

const isFile = (h: PartHead) => h.filename !== undefined || !(h.mimetype.startsWith('text/') || h.mimetype === 'application/json');

function options(o: { maxBytes?: number; hint?: number; fileLimit?: number; released?: Buffer[] } = {}) {
  return {
    boundary: B,
    maxBytes: o.maxBytes ?? 1 << 24,
    isFile,
    onPart: (h: PartHead): PartSink =>
      h.name === 'targets'
        ? { kind: 'contiguous', limit: o.maxBytes ?? 1 << 24, sizeHint: o.hint ?? 0, tooLarge: () => new ServiceError('request_too_large', 'big') }
        : { kind: 'collect', limit: o.fileLimit ?? 1 << 20, tooLarge: () => new ServiceError('image_too_large', 'image') },
    alloc: (n: number) => Buffer.allocUnsafeSlow(n),
    release: (b: Buffer) => void o.released?.push(b),
  };
}

const simple = (parts: ReadPart[]) => parts.map((p) => ({ name: p.head.name, filename: p.head.filename, mimetype: p.head.mimetype, content: p.bytes.toString('latin1') }));
const expected = (parts: Part[]) => parts.map((p) => ({ name: p.name, filename: p.filename, mimetype: (p.type ?? 'text/plain').toLowerCase(), content: p.content.toString('latin1') }));

async function refusal(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('the body was accepted');
}

// Binary content full of near-delimiters: CR LF, dashes and prefixes of the boundary.
const tricky = Buffer.concat([Buffer.from(`\r\n-\r\n--\r\n--XyZ\r\n--XyZ-boundary-4\r\r\n\n--${B.slice(0, -1)}`), Buffer.from([0, 13, 10, 45, 45, 255])]);

t.test('a delimiter split across chunks at every position, for both kinds of part', async (t) => {
  const parts: Part[] = [
    { name: 'source', content: Buffer.from('{"embedding":[0.1,0.2]}') },
    { name: 'targets', filename: 't.f32', type: 'application/octet-stream', content: tricky },
    { name: 'top_k', content: Buffer.from('3') },
    { name: 'img', filename: 'a.png', type: 'image/png', content: tricky },
  ];
  const raw = body(parts, { preamble: 'ignored preamble', epilogue: 'ignored epilogue' });
  for (let size = 1; size <= raw.length; size++) {
    for (const hint of [0, 7, raw.length]) {
      const got = await readMultipart(stream(raw, [size]), options({ hint }));
      if (JSON.stringify(simple(got)) !== JSON.stringify(expected(parts))) t.fail(`chunks of ${size} bytes, hint ${hint}: ${JSON.stringify(simple(got))}`);
    }
  }
  t.pass(`every chunk size from 1 to ${raw.length}`);
});

t.test('a streamed targets part: every chunk size, the rows compared and the parts after it read', async (t) => {
  const dims = 4;
  const rows = new Float32Array(Array.from({ length: 9 * dims }, (_, i) => Math.sin(i * 0.7)));
  const source = rows.slice(3 * dims, 4 * dims);
  // Targets whose bytes hold near-delimiters, so that the end of the part is found, not guessed.
  const targets = Buffer.concat([Buffer.from(rows.buffer), tricky.subarray(0, 16 * Math.floor(tricky.length / 16))]);
  const floats = new Float32Array(targets.buffer.slice(targets.byteOffset, targets.byteOffset + targets.length));
  const parts: Part[] = [
    { name: 'source', content: Buffer.from('{}') },
    { name: 'targets', filename: 't.f32', type: 'application/octet-stream', content: targets },
    { name: 'top_k', content: Buffer.from('3') },
  ];
  const want = await compareManyToMany(source, floats, dims, 'euclidean', 3).catch((e: unknown) => e);
  t.ok(!(want instanceof Error), 'the bytes are finite rows');
  const raw = body(parts, { preamble: "p", epilogue: "e" });
  for (let size = 1; size <= raw.length; size++) {
    let s: TargetStream | undefined;
    const o = {
      ...options(),
      onPart: (h: PartHead, earlier: readonly ReadPart[]): PartSink => {
        if (h.name !== 'targets') return { kind: 'collect', limit: 1 << 20, tooLarge: () => new ServiceError('image_too_large', 'image') };
        if (earlier.length !== 1 || earlier[0]!.head.name !== 'source') t.fail('the parts before the targets are handed over');
        const stream = new TargetStream({ sources: source, dims, metric: 'euclidean', topK: 3, maxRows: 100 }, Buffer.from(`\r\n--${B}`));
        s = stream;
        return { kind: 'stream', feed: (chunk) => stream.feed(chunk) };
      },
    };
    const got = await readMultipart(stream(raw, [size]), o);
    const names = got.map((p) => `${p.head.name}:${p.bytes.length}`).join(',');
    if (names !== 'source:2,targets:0,top_k:1') t.fail(`chunks of ${size}: ${names}`);
    if (s!.byteLength !== targets.length) t.fail(`chunks of ${size}: ${s!.byteLength} bytes`);
    let answer: unknown;
    try {
      answer = s!.finish(3);
    } catch (e) {
      answer = e;
    }
    if (JSON.stringify(answer) !== JSON.stringify(want)) t.fail(`chunks of ${size}: ${JSON.stringify(answer)} vs ${JSON.stringify(want)}`);
  }
  t.equal(TargetStream.live, 0);
  t.pass(`every chunk size from 1 to ${raw.length}`);
});

t.test('random bodies in random chunks read as their model says', async (t) => {
  const part = fc.record({
    name: fc.constantFrom('source', 'targets', 'top_k', 'img', 'model_name', 'x y', 'ü'),
    file: fc.boolean(),
    content: fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.constant(new Uint8Array(tricky))),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(part, { maxLength: 6 }), fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 8 }), fc.boolean(), fc.constantFrom('', ' ', '\t  '), async (ps, sizes, withPre, padding) => {
      const parts: Part[] = ps.map((p) => ({ name: p.name, content: Buffer.from(p.content), ...(p.file || p.name === 'targets' ? { filename: 'f.bin', type: 'application/octet-stream' } : {}) }));
      const raw = body(parts, { padding, ...(withPre ? { preamble: 'pre', epilogue: 'epi\r\n' } : {}) });
      const got = await readMultipart(stream(raw, sizes), options({ hint: sizes[0]! * 3 }));
      t.same(simple(got), expected(parts));
    }),
    { numRuns: 300 },
  );
});

t.test('headers: quoting, filename*, folded lines, case, parts without a disposition are skipped', async (t) => {
  const raw = Buffer.from(
    `--${B}\r\ncontent-disposition: FORM-DATA; name="a\\"b"; filename*=utf-8''na%C3%AFve.bin\r\nCONTENT-TYPE: Application/Octet-Stream; x=1\r\n\r\nAB\r\n` +
      `--${B}\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n` +
      `--${B}\r\nContent-Disposition: attachment; name="skipped"\r\n\r\nnot form-data\r\n` +
      `--${B}\r\nContent-Disposition: form-data;\r\n name=plain\r\n\r\nv\r\n` +
      `--${B}\r\n\r\nno headers at all\r\n--${B}--`,
  );
  const got = await readMultipart(stream(raw, [5]), options());
  t.same(simple(got), [
    { name: 'a"b', filename: 'naïve.bin', mimetype: 'application/octet-stream', content: 'AB' },
    { name: 'plain', filename: undefined, mimetype: 'text/plain', content: 'v' },
  ]);
});

t.test('broken envelopes are 400 invalid_request, never a hang', async (t) => {
  const parts: Part[] = [{ name: 'source', content: Buffer.from('{}') }, { name: 'targets', filename: 't', type: 'application/octet-stream', content: Buffer.alloc(1000, 7) }];
  const whole = body(parts);
  const cases: Array<[string, Buffer, RegExp]> = [
    ['no closing delimiter', body(parts, { close: false }), /ends before its closing boundary/],
    ['truncated in the binary part', whole.subarray(0, 600), /ends before its closing boundary/],
    ['truncated in a header', whole.subarray(0, 20), /ends before its closing boundary/],
    ['bare LF line endings', Buffer.from(whole.toString('latin1').replace(/\r\n/g, '\n'), 'latin1'), /closing boundary|something other than CRLF/],
    ['garbage after a delimiter', Buffer.from(`--${B}x\r\n\r\nv\r\n--${B}--`), /something other than CRLF/],
    ['a header line without a colon', Buffer.from(`--${B}\r\nnonsense\r\n\r\nv\r\n--${B}--`), /malformed header/],
    ['no name', Buffer.from(`--${B}\r\nContent-Disposition: form-data\r\n\r\nv\r\n--${B}--`), /has no name/],
    ['not multipart at all', Buffer.from('{"source": {}}'), /ends before its closing boundary/],
    ['empty', Buffer.alloc(0), /ends before its closing boundary/],
  ];
  for (const [what, raw, detail] of cases) {
    for (const size of [1, 3, 64 * 1024]) {
      const e = await refusal(readMultipart(stream(raw, [size]), options()));
      t.equal(e.code, 'invalid_request', `${what} (chunks of ${size})`);
      t.match(e.message, detail, what);
    }
  }
  const headers = await refusal(readMultipart(stream(Buffer.from(`--${B}\r\nX: ${'a'.repeat(100 * 1024)}\r\n\r\nv\r\n--${B}--`), [4096]), options()));
  t.match(headers.message, /malformed header/, 'an endless header block is refused once past 80 KiB');
  const gone = stream(whole, [100], { abortAt: 500 });
  const e = await refusal(readMultipart(gone, options()));
  t.match(e.message, /connection closed before/, 'a client that goes away mid-body');
});

t.test('limits refuse on the first byte past them, before the body is read in full', async (t) => {
  const big = body([{ name: 'targets', filename: 't', type: 'application/octet-stream', content: Buffer.alloc(1 << 20, 1) }]);
  const s = stream(big, [16 * 1024]);
  const released: Buffer[] = [];
  let givenAtRefusal = -1;
  const e = await refusal(readMultipart(s, options({ maxBytes: 100_000, hint: 100_000, released })).catch((err: unknown) => {
    givenAtRefusal = s.given();
    throw err;
  }));
  t.equal(e.code, 'request_too_large');
  t.equal(e.status, 413);
  t.ok(givenAtRefusal < 200_000, `refused after ${givenAtRefusal} of ${big.length} bytes`);
  t.equal(released.length, 1, 'the targets buffer is given back');
  const img = stream(body([{ name: 'img', filename: 'a.png', type: 'image/png', content: Buffer.alloc(300_000, 2) }]), [16 * 1024]);
  let imgAtRefusal = -1;
  const ei = await refusal(readMultipart(img, options({ fileLimit: 100_000 })).catch((err: unknown) => {
    imgAtRefusal = img.given();
    throw err;
  }));
  t.equal(ei.code, 'image_too_large');
  t.ok(imgAtRefusal < 200_000, `an image part over its limit is refused while it streams (after ${imgAtRefusal} bytes)`);
  const many = body(Array.from({ length: 70 }, (_, i) => ({ name: `f${i}`, content: Buffer.from('v') })));
  const em = await refusal(readMultipart(stream(many), options()));
  t.equal(em.code, 'request_too_large');
  t.match(em.message, /too many parts/);
  // Without Content-Length the targets buffer grows, still bounded by the limit.
  const grown = await readMultipart(stream(big, [10_000]), options({ hint: 0, maxBytes: 2 << 20 }));
  t.equal(grown[0]!.bytes.length, 1 << 20);
  t.ok(grown[0]!.bytes.every((b) => b === 1));
});

t.test('boundaryOf: token, quoted, missing, too long', async (t) => {
  t.equal(boundaryOf(`multipart/form-data; boundary=${B}`), B);
  t.equal(boundaryOf('multipart/form-data; charset=utf-8; BOUNDARY="a b\\"c"'), 'a b"c');
  t.throws(() => boundaryOf('multipart/form-data'), /no boundary parameter/);
  t.throws(() => boundaryOf('multipart/form-data; boundary='), /no boundary parameter/);
  t.throws(() => boundaryOf(`multipart/form-data; boundary=${'x'.repeat(71)}`), /1 to 70 characters/);
});

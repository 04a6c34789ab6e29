/**
 * The attacks of issue 24, each a function that sends its request(s) to a live `serve` and says what
 * came back. Inputs are built here, once (bench/adversary/inputs.ts); nothing leaves loopback: the one
 * URL an attack sends is a documentation address (192.0.2.1, TEST-NET-1), which the service refuses
 * before any connection, with remote images off or on.
 */
import { connect } from 'node:net';
import { request } from 'undici';

export interface Targets {
  gateway: string;
  mcp: string;
  console: string;
  restKey: string;
  mcpKey: string;
}

/** What one attack request got: HTTP status, the contract code (or the MCP tool error's), its time. */
export interface Answer {
  status: number;
  code: string;
  ms: number;
}

export interface Attack {
  name: string;
  /** The issue 24 item it comes from. */
  item: string;
  /** What a correct service answers (status and code), for the report. */
  expect: string;
  /** Sends the attack once. */
  run(t: Targets): Promise<Answer>;
  /** How many times it is sent in its window (one after another). */
  repeat: number;
  /** Builds its inputs, before its window (the well-behaved client shares this process). */
  prepare?: () => void;
}

async function post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, bodyTimeout: 120_000, headersTimeout: 120_000 });
  const text = await res.body.text();
  const ms = performance.now() - t0;
  let code = '';
  try {
    const j = JSON.parse(text) as { error?: unknown; result?: { isError?: boolean; structuredContent?: { error?: string } } };
    if (typeof j.error === 'string') code = j.error;
    else if (j.result?.isError) code = `tool error ${j.result.structuredContent?.error ?? '?'}`;
    else code = 'ok';
  } catch {
    code = `not JSON: ${text.slice(0, 40)}`;
  }
  return { status: res.statusCode, code, ms };
}

const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
const MCP_ACCEPT = { accept: 'application/json, text/event-stream' };
const rpc = (name: string, args: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

/** Invalid JSON of `bytes`: a string that never ends. */
function unterminated(bytes: number, field: string): Buffer {
  const head = Buffer.from(`{"${field}":"`);
  const b = Buffer.alloc(bytes, 0x41);
  head.copy(b);
  return b;
}

/** The status and error code of a whole HTTP response in `data`, or null while it is incomplete. */
function parsedAnswer(data: string): { status: number; code: string } | null {
  const end = data.indexOf('\r\n\r\n');
  const len = Number(/\r\ncontent-length: *(\d+)/i.exec(data.slice(0, Math.max(0, end)))?.[1] ?? NaN);
  if (end < 0 || data.length - end - 4 < len) return null;
  let code = 'ok';
  try {
    code = (JSON.parse(data.slice(end + 4, end + 4 + len)) as { error?: string }).error ?? 'ok';
  } catch {
    code = 'not JSON';
  }
  return { status: Number(data.slice(9, 12)), code };
}

/**
 * `connections` uploads that each declare `declared` bytes and send `sent` of them, held open until
 * every one is answered or has waited `holdMs`; then all are closed. The answers: those refused, and
 * a 0 for those still held (taken in full, waiting for their bodies).
 */
async function heldUploads(base: string, key: string, connections: number, declared: number, sent: number, holdMs: number, path = '/verify'): Promise<Answer[]> {
  const url = new URL(base);
  const t0 = performance.now();
  const sockets = Array.from({ length: connections }, () => connect(Number(url.port), url.hostname));
  const answers = await Promise.all(
    sockets.map(
      (s) =>
        new Promise<Answer>((resolve) => {
          let data = '';
          const timer = setTimeout(() => resolve({ status: 0, code: 'held', ms: performance.now() - t0 }), holdMs);
          s.on('data', (c) => {
            data += c.toString('latin1');
            const a = parsedAnswer(data);
            if (!a) return;
            clearTimeout(timer);
            resolve({ ...a, ms: performance.now() - t0 });
          });
          s.on('error', () => undefined);
          s.write(`POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n`);
          s.write(unterminated(sent, 'img1'));
        }),
    ),
  );
  for (const s of sockets) s.destroy();
  return answers;
}

/**
 * One request on its own socket: the head, then `body` (the server may close before taking it all),
 * answered when the whole response has arrived or the socket closes.
 */
function rawExchange(base: string, head: string, body: Buffer | string, timeoutMs = 10_000): Promise<Answer> {
  const url = new URL(base);
  const t0 = performance.now();
  return new Promise<Answer>((resolve) => {
    const s = connect(Number(url.port), url.hostname);
    let data = '';
    const done = (a: Answer) => {
      clearTimeout(timer);
      s.destroy();
      resolve(a);
    };
    const timer = setTimeout(() => done({ status: 0, code: 'no answer', ms: performance.now() - t0 }), timeoutMs);
    s.on('data', (c) => {
      data += c.toString('latin1');
      const a = parsedAnswer(data);
      if (a) done({ ...a, ms: performance.now() - t0 });
    });
    s.on('error', () => undefined);
    s.on('close', () => done({ status: 0, code: data ? 'closed mid-answer' : 'closed unanswered', ms: performance.now() - t0 }));
    s.write(head.replace('HOST', url.host));
    s.write(body);
  });
}

/** Built on first use, then reused: the large bodies below take a second or two to build. */
function once<T>(make: () => T): () => T {
  let v: T | undefined;
  return () => (v ??= make());
}

/**
 * A /compare body of about `bytes` bytes of JSON rows of 128 numbers (the digits of float32 values
 * printed as doubles, as a JSON encoder writes them), under `field`; with `field` 'targets' a valid
 * body, with any other an unknown field.
 */
function numbersBody(bytes: number, field: string, source: number[]): Buffer {
  const row = `[${Array.from({ length: 128 }, (_, i) => Math.fround(Math.sin(i * 0.37) * 0.123456789)).join(',')}]`;
  const head = `{"source":{"embedding":${JSON.stringify(source)}},"model_name":"Dlib","top_k":5,"${field}":[`;
  const n = Math.floor((bytes - head.length - 2) / (row.length + 1));
  return Buffer.from(`${head}${Array(n).fill(row).join(',')}]}`);
}

export interface Inputs {
  /** 16 flat 6324 x 6324 PNGs as base64 (each under the 40 MP image limit, about 120 KB). */
  bigPngs: string[];
  /** A flat 4000 x 4000 PNG: a /verify with mtcnn of two of them is within the model server's budget. */
  mtcnnPng: string;
  /** Issue 24's JPEG: warning, then fatal error, before any row. */
  jpegRepro: string;
}

export function attacks(inputs: Inputs): Attack[] {
  const E = Array.from({ length: 128 }, (_, i) => Math.sin(i));
  // 7.6 MiB of targets whose values are strings: zod made one issue per value (1.54 GB).
  const badTargets = Array.from({ length: Math.floor((7.6 * 2 ** 20) / (128 * 4)) }, () => Array.from({ length: 128 }, () => 'x'));
  const overLimit = Array.from({ length: 100_001 }, () => [0]);
  const unterminated25 = once(() => unterminated(25 * 2 ** 20 - 64, 'img1'));
  const unterminated64 = once(() => unterminated(64 * 2 ** 20 - 64, 'targets_b64'));
  const unterminatedMcp = once(() => unterminated(25 * 2 ** 20 - 64, 'jsonrpc'));
  const badTargetsRpc = once(() => rpc('compare_inputs', { source: { embedding: E }, targets: badTargets }));
  const overLimitRpc = once(() => rpc('compare_inputs', { source: { embedding: E }, targets: overLimit }));
  const validTargets = once(() => numbersBody(64 * 2 ** 20 - 4096, 'targets', E));
  const numbersElsewhere = once(() => numbersBody(64 * 2 ** 20 - 4096, 'extra', E));
  // 96,000 rows of 128 float32 as base64: 64 MiB of one JSON string.
  const mib = once(() => Buffer.from(`{"img1":"${'A'.repeat(2 ** 20 - 12)}"}`));
  // 64 MiB of /compare JSON: one row of 16 million numbers, and 16 million rows of one number.
  const oneRow = once(() => Buffer.from(`{"source":{"embedding":${JSON.stringify(E)}},"targets":[[${Array(Math.floor((64 * 2 ** 20 - 16384) / 2)).fill('0').join(',')}]]}`));
  const tinyRows = once(() => Buffer.from(`{"source":{"embedding":${JSON.stringify(E)}},"targets":[${Array(Math.floor((64 * 2 ** 20 - 16384) / 4)).fill('[0]').join(',')}]}`));
  const resourcesBatch = JSON.stringify(Array.from({ length: 50 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'resources/list', params: {} })));
  const validB64 = once(() => {
    const rows = new Float32Array(96_000 * 128).map((_, i) => Math.sin(i * 0.37));
    return Buffer.from(JSON.stringify({ source: { embedding: E }, model_name: 'Dlib', top_k: 5, targets_b64: Buffer.from(rows.buffer).toString('base64') }));
  });
  return [
    {
      // The floor the rows below are read against: serve's own stall and RSS movement in a window with
      // only the well-behaved client's traffic (its /verify calls, their GC), on the same machine.
      name: 'control: no attack, the well-behaved client alone',
      item: 'control',
      expect: 'nothing sent',
      repeat: 0,
      run: () => Promise.reject(new Error('the control sends nothing')),
    },
    {
      name: 'gateway: 25 MiB of unterminated JSON (valid key)',
      item: 'high 1',
      expect: '400 invalid_request',
      repeat: 3,
      prepare: unterminated25,
      run: (t) => post(`${t.gateway}/verify`, unterminated25(), bearer(t.restKey)),
    },
    {
      name: 'gateway: 64 MiB of unterminated JSON on /compare (valid key)',
      item: 'high 1',
      expect: '400 invalid_request',
      repeat: 2,
      prepare: unterminated64,
      run: (t) => post(`${t.gateway}/compare`, unterminated64(), bearer(t.restKey)),
    },
    {
      // Valid, and as large as /compare takes: JSON.parse of its 3.3 million numbers held the loop
      // for 0.9–2.9 s; its rows are now read natively (src/http/json-body.ts).
      name: 'gateway: 64 MiB of valid JSON targets on /compare (not an attack)',
      item: 'large bodies',
      expect: '200 ok',
      repeat: 2,
      prepare: validTargets,
      run: (t) => post(`${t.gateway}/compare`, validTargets(), bearer(t.restKey)),
    },
    {
      name: 'gateway: 64 MiB of valid targets_b64 on /compare (not an attack)',
      item: 'large bodies',
      expect: '200 ok',
      repeat: 2,
      prepare: validB64,
      run: (t) => post(`${t.gateway}/compare`, validB64(), bearer(t.restKey)),
    },
    {
      name: 'gateway: 64 MiB of numbers outside targets on /compare (valid key)',
      item: 'large bodies',
      expect: '413 request_too_large',
      repeat: 2,
      prepare: numbersElsewhere,
      run: (t) => post(`${t.gateway}/compare`, numbersElsewhere(), bearer(t.restKey)),
    },
    {
      name: 'MCP: 25 MiB of invalid JSON, no key',
      item: 'high 1',
      expect: '401 missing_api_key',
      repeat: 3,
      prepare: unterminatedMcp,
      run: (t) => post(`${t.mcp}/mcp`, unterminatedMcp(), MCP_ACCEPT),
    },
    {
      name: 'console: invalid JSON to /api/keys, bad session',
      item: 'high 1',
      expect: '401 unauthorized',
      repeat: 3,
      run: (t) => post(`${t.console}/api/keys`, unterminated(60 * 1024, 'name'), bearer('not-a-session')),
    },
    {
      name: 'MCP: compare_inputs, 7.6 MiB of string targets',
      item: 'high 2',
      expect: '413 request_too_large (2 million values, over limits.max_json_values)',
      repeat: 3,
      prepare: badTargetsRpc,
      run: (t) => post(`${t.mcp}/mcp`, badTargetsRpc(), { ...bearer(t.mcpKey), ...MCP_ACCEPT }),
    },
    {
      name: 'MCP: compare_inputs, 100,001 targets',
      item: 'high 2',
      expect: 'tool error too_many_targets (413)',
      repeat: 3,
      prepare: overLimitRpc,
      run: (t) => post(`${t.mcp}/mcp`, overLimitRpc(), { ...bearer(t.mcpKey), ...MCP_ACCEPT }),
    },
    {
      name: '/represent: 16 flat 40 MP PNGs (2.6 MB body, 1.9 GB decoded)',
      item: 'high 3',
      expect: '413 too_many_pixels',
      repeat: 3,
      run: (t) => post(`${t.gateway}/represent`, JSON.stringify({ img: inputs.bigPngs, detector_backend: 'skip' }), bearer(t.restKey)),
    },
    {
      name: '/represent: the uninitialised-memory JPEG, detector skip',
      item: 'high 5',
      expect: '400 invalid_image',
      repeat: 3,
      run: (t) => post(`${t.gateway}/represent`, JSON.stringify({ img: inputs.jpegRepro, detector_backend: 'skip' }), bearer(t.restKey)),
    },
    {
      name: 'MCP: an https URL with remote images off',
      item: 'medium 8',
      expect: 'tool error input_mode_disabled (400)',
      repeat: 3,
      run: (t) => post(`${t.mcp}/mcp`, rpc('represent_face', { img: 'https://192.0.2.1/face.jpg' }), { ...bearer(t.mcpKey), ...MCP_ACCEPT }),
    },
    {
      name: 'file: an existing path outside the root, then a missing one',
      item: 'low',
      expect: '400 url_not_allowed, twice the same',
      repeat: 2,
      async run(t) {
        const a = await post(`${t.gateway}/represent`, JSON.stringify({ img: 'file:///etc/passwd' }), bearer(t.restKey));
        const b = await post(`${t.gateway}/represent`, JSON.stringify({ img: 'file:no-such-file.jpg' }), bearer(t.restKey));
        return { status: a.status === b.status ? a.status : -1, code: a.code === b.code ? a.code : `${a.code} / ${b.code}`, ms: a.ms + b.ms };
      },
    },
    {
      name: 'body budget: 12 uploads declaring 25 MiB, 1 MiB sent each, held',
      item: 'low',
      // One key: since the per-account share, those past 96 MiB are its own 429 (three are held).
      expect: '429 rate_limited past the account share (96 MiB), 503 body_capacity_full past 256 MiB',
      repeat: 1,
      async run(t) {
        const answers = await heldUploads(t.gateway, t.restKey, 12, 25 * 2 ** 20, 2 ** 20, 3000);
        const refused = answers.filter((a) => a.status !== 0);
        const first = refused[0];
        return { status: first?.status ?? 0, code: `${first?.code ?? 'none'} (${refused.length} of 12 refused, ${answers.length - refused.length} held)`, ms: Math.max(...refused.map((a) => a.ms), 0) };
      },
    },
    {
      name: '/verify with mtcnn of two flat 6324 x 6324 PNGs (a few hundred KB sent)',
      item: 'issue 37, 3',
      expect: '413 request_over_memory_budget, before decoding',
      repeat: 2,
      run: (t) => post(`${t.gateway}/verify`, JSON.stringify({ img1: inputs.bigPngs[0], img2: inputs.bigPngs[1], detector_backend: 'mtcnn' }), bearer(t.restKey)),
    },
    {
      // Accepted, not refused: the budget must hold for the largest jobs it lets in, two at a time.
      name: 'largest accepted mtcnn job, twice at once: two /verify of two flat 4000 x 4000 PNGs',
      item: 'issue 37, 3',
      expect: 'computed (422 no_face_detected: a flat image); the other computed or, past its wait for room, 503 memory_budget_full; the model server within its 2 GiB budget',
      repeat: 1,
      async run(t) {
        const body = JSON.stringify({ img1: inputs.mtcnnPng, img2: inputs.mtcnnPng, detector_backend: 'mtcnn' });
        const both = await Promise.all([post(`${t.gateway}/verify`, body, bearer(t.restKey)), post(`${t.gateway}/verify`, body, bearer(t.restKey))]);
        // The computed one first: the other may have waited past its queue timeout for room.
        const [a, b] = both.sort((x, y) => Number(x.status === 503) - Number(y.status === 503)) as [Answer, Answer];
        return { ...a, ms: Math.max(a.ms, b.ms), code: `${a.code} (the other: ${b.status} ${b.code})` };
      },
    },
    {
      // Issue 37, round 2: nothing is read before it is routed. 4 senders, 20 each, no key.
      name: 'round 2: 80 x 1 MB JSON to unknown paths and methods, no key, 4 senders',
      item: 'round 2',
      expect: '404 not_found or 405 method_not_allowed, before the body (not_found/method_not_allowed)',
      repeat: 1,
      prepare: mib,
      async run(t) {
        const where: Array<[string, string, string]> = [
          [t.gateway, 'POST', '/x'],
          [t.gateway, 'POST', '/capabilities'],
          [t.gateway, 'OPTIONS', '/verify'],
          [t.gateway, 'DELETE', '/verify'],
          [t.mcp, 'POST', '/mcp/x'],
        ];
        const body = mib();
        const all: Answer[] = [];
        await Promise.all(
          Array.from({ length: 4 }, async (_, sender) => {
            for (let i = 0; i < 20; i++) {
              const [base, method, path] = where[(sender * 20 + i) % where.length]!;
              all.push(await rawExchange(base, `${method} ${path} HTTP/1.1\r\nhost: HOST\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`, body));
            }
          }),
        );
        // The server closes with the body unread: the peer's RST can reach this socket before the
        // answer was read, which then never arrives (counted apart; any other answer is reported).
        const refused = all.filter((a) => a.status === 404 || a.status === 405);
        const reset = all.filter((a) => a.status === 0 && a.code === 'closed unanswered');
        const other = all.find((a) => a.status !== 404 && a.status !== 405 && !reset.includes(a));
        const slowest = Math.max(...refused.map((a) => a.ms), 0);
        if (other) return { status: other.status, code: `${other.code} (${refused.length} of ${all.length} refused)`, ms: slowest };
        return { status: 404, code: `not_found/method_not_allowed (${refused.length} of ${all.length} answered 404 or 405, ${reset.length} reset before the answer was read)`, ms: slowest };
      },
    },
    {
      // One free key opens six /compare uploads declaring 64 MiB each and drips them; the well-behaved
      // client is another tenant. Before the per-account share its /verify got 503 body_capacity_full.
      name: 'round 2: one key, 6 uploads to /compare declaring 64 MiB each, dripping',
      item: 'round 2',
      expect: '429 rate_limited for those past the account share (96 MiB)',
      repeat: 1,
      async run(t) {
        const answers = await heldUploads(t.gateway, t.restKey, 6, 64 * 2 ** 20, 64 * 1024, 4000, '/compare');
        const refused = answers.filter((a) => a.status !== 0);
        // The answer past the share; the upload within it may also be cut off, later, as too slow.
        const first = refused.find((a) => a.status === 429) ?? refused[0];
        return { status: first?.status ?? 0, code: `${first?.code ?? 'none'} (${refused.length} of 6 refused, ${answers.length - refused.length} held)`, ms: Math.max(...refused.map((a) => a.ms), 0) };
      },
    },
    {
      name: 'round 2: an upload dripping 10 bytes a second',
      item: 'round 2',
      expect: '408 upload_too_slow (after the 1.5 s grace)',
      repeat: 1,
      async run(t) {
        const url = new URL(t.gateway);
        const t0 = performance.now();
        return new Promise<Answer>((resolve) => {
          const s = connect(Number(url.port), url.hostname);
          let data = '';
          const tick = setInterval(() => s.write('AAAAAAAAAA'), 1000);
          const end = (a: Answer) => {
            clearInterval(tick);
            s.destroy();
            resolve(a);
          };
          setTimeout(() => end({ status: 0, code: 'held', ms: performance.now() - t0 }), 11_000);
          s.on('data', (c) => {
            data += c.toString('latin1');
            const a = parsedAnswer(data);
            if (a) end({ ...a, ms: performance.now() - t0 });
          });
          s.on('error', () => undefined);
          s.write(`POST /verify HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${t.restKey}\r\ncontent-type: application/json\r\ncontent-length: ${2 ** 20}\r\n\r\n{"img1":"`);
        });
      },
    },
    {
      name: 'round 2: /compare with 64 MiB of one targets row',
      item: 'round 2',
      expect: '413 request_too_large',
      repeat: 2,
      prepare: oneRow,
      run: (t) => post(`${t.gateway}/compare`, oneRow(), bearer(t.restKey)),
    },
    {
      name: 'round 2: /compare with 64 MiB of one-number targets rows',
      item: 'round 2',
      expect: '413 too_many_targets',
      repeat: 2,
      prepare: tinyRows,
      run: (t) => post(`${t.gateway}/compare`, tinyRows(), bearer(t.restKey)),
    },
    {
      name: 'largest accepted request: /verify of two flat 40 MP PNGs (not an attack)',
      item: 'high 3',
      expect: 'computed (422 no_face_detected: a flat image), within the pixel budget',
      repeat: 1,
      run: (t) => post(`${t.gateway}/verify`, JSON.stringify({ img1: inputs.bigPngs[0], img2: inputs.bigPngs[1], detector_backend: 'opencv' }), bearer(t.restKey)),
    },
    {
      // Last: it spends the MCP key's window. Every element counts, as a REST request does.
      name: 'round 2: MCP, 300 batches of 50 resources/list, one key',
      item: 'round 2',
      expect: '429 rate_limited: every element past the key window, whole batches once it is spent',
      repeat: 1,
      async run(t) {
        const t0 = performance.now();
        let limited = 0;
        let answered = 0;
        let refusedBatches = 0;
        let status = 0;
        for (let i = 0; i < 300; i++) {
          const res = await request(`${t.mcp}/mcp`, { method: 'POST', body: resourcesBatch, headers: { 'content-type': 'application/json', ...bearer(t.mcpKey), ...MCP_ACCEPT } });
          status = res.statusCode;
          const out = (await res.body.json()) as Array<{ result?: unknown; error?: { data?: { error?: string } } }> | { error?: string };
          if (!Array.isArray(out)) {
            // The key's window is spent: the whole batch is refused from the headers.
            if (out.error === 'rate_limited') refusedBatches++;
            continue;
          }
          answered += out.filter((x) => x.result !== undefined).length;
          limited += out.filter((x) => x.error?.data?.error === 'rate_limited').length;
        }
        return { status, code: `rate_limited (${answered} of 15000 elements answered, ${limited} refused in their batch, ${refusedBatches} batches refused from the headers)`, ms: performance.now() - t0 };
      },
    },
  ];
}

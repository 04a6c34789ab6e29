/**
 * The NaN/Infinity diagnosis of JSON bodies (src/http/json-body.ts) reads the parse error and a
 * few characters around it, never the whole body (issue 24, item 1: the old diagnosis rebuilt a
 * 25 MiB invalid body one character at a time, 3.3 s of event loop and 964 MiB).
 */
import t from 'tap';
import { NATIVE_CHECK_MIN_BYTES, NON_FINITE_DETAIL, nonFiniteAtOffset, nonFiniteAtParseError, parseJsonBody } from '../src/http/json-body.js';
import { ServiceError } from '../src/errors/index.js';

function parseError(text: string): unknown {
  try {
    JSON.parse(text);
  } catch (err) {
    return err;
  }
  return null;
}

/**
 * `text` behind a Proxy that counts the characters a caller reads: an index read is 1, a slice its
 * length, and any other use (a method that scans, or conversion to a primitive) the whole length.
 */
function counted(text: string): { value: string; read: () => number } {
  let read = 0;
  const proxy = new Proxy(Object(text) as object, {
    get(target, key) {
      if (key === 'length') return text.length;
      if (typeof key === 'string' && /^\d+$/.test(key)) {
        read += 1;
        return text[Number(key)];
      }
      if (key === 'slice' || key === 'substring') {
        return (a?: number, b?: number) => {
          const s = key === 'slice' ? text.slice(a, b) : text.substring(a ?? 0, b);
          read += s.length;
          return s;
        };
      }
      const v = Reflect.get(target, key) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        read += text.length;
        return (v as (...a: unknown[]) => unknown).apply(text, args);
      };
    },
  });
  return { value: proxy as unknown as string, read: () => read };
}

t.test('a bare NaN, Infinity or -Infinity where the parse stopped is diagnosed', async (t) => {
  const pad = '"x":"' + 'a'.repeat(50) + '"';
  const cases: Array<[string, boolean, string]> = [
    ['[NaN, 1]', true, 'short body'],
    ['{"a":[-Infinity]}', true, '-Infinity'],
    ['{"a":Infinity}', true, 'Infinity'],
    [`{${pad}, "e": [0.1, NaN, 0.2]}`, true, 'NaN in the middle of a long body'],
    [`{"e": [NaN, 0.2], ${pad}}`, true, 'NaN near the start of a long body'],
    [`{${pad}, "e": [0.1, 2, NaN]`, true, 'NaN near the end'],
    [`{${pad}, "e": [0.1, 2, -Infinity, 1]}`, true, '-Infinity in a long body'],
    [`{${pad}, "e": [0.1, 2,      Infinity]}`, true, 'after whitespace'],
    ['[NaN', true, 'the first thing wrong is the NaN'],
    ['{"a":"NaN"', false, 'inside a string (the body is broken elsewhere)'],
    ['{"a":"x\\"NaN"', false, 'after an escaped quote, still inside a string'],
    ['[NaNa]', false, 'part of a longer word'],
    [`{${pad}, "e": [0.1, 2, Inf, 1]}`, false, 'not a whole token'],
    [`{${pad}, "e": [0.1, 2 NaN]}`, false, 'not where a value may start'],
    ['{"NaN": Nope}', false, 'a token in a key and another word'],
    [`{${pad}, Infinity: 1}`, false, 'a key'],
    ['[1, 2', false, 'broken for another reason'],
  ];
  for (const [text, want, label] of cases) t.equal(nonFiniteAtParseError(text, parseError(text)), want, label);
  t.equal(nonFiniteAtParseError('[NaN]', new Error('something else')), false, 'an error of another shape is not diagnosed');
  t.equal(nonFiniteAtParseError('[NaN]', 'not an error'), false);
});

t.test('the diagnosis reads at most 32 characters of the body, whatever its size', async (t) => {
  const big = 'A'.repeat(4 << 20);
  const bodies: Array<[string, string]> = [
    [`{"img1":"${big}`, 'an unterminated string (the attack: 25 MiB of it cost 3.3 s)'],
    [`{"img1":"${big}", "img2": [0.1, NaN]}`, 'a NaN after 4 MiB'],
    [`{"img2": [NaN, 0.1], "img1":"${big}"`, 'a NaN before 4 MiB of an unterminated body'],
    [`{"img1":"${big}", "img2": [0.1, -Infinity]}`, '-Infinity after 4 MiB'],
    [`{"img1":"${big}", "img2": [0.1 0.2]}`, 'another syntax error after 4 MiB'],
  ];
  for (const [text, label] of bodies) {
    const err = parseError(text);
    const c = counted(text);
    nonFiniteAtParseError(c.value, err);
    t.ok(c.read() <= 32, `${label}: read ${c.read()} characters of ${text.length}`);
  }
});

/** Runs `f` with JSON.parse counted (secure-json-parse calls it), and returns the count. */
async function parseCalls(f: () => Promise<unknown>): Promise<number> {
  const original = JSON.parse;
  let calls = 0;
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
    calls++;
    return original(...args);
  }) as typeof JSON.parse;
  try {
    await f().catch(() => undefined);
  } finally {
    JSON.parse = original;
  }
  return calls;
}

async function refusal(body: string | Buffer): Promise<{ code: string; message: string } | null> {
  try {
    await parseJsonBody(Buffer.isBuffer(body) ? body : Buffer.from(body));
    return null;
  } catch (err) {
    t.type(err, ServiceError);
    return { code: (err as ServiceError).code, message: (err as Error).message };
  }
}

t.test('a large body that is not JSON is refused by the native check: JSON.parse never runs (issue 24)', async (t) => {
  const vectors = '[0.1, 0.2, 0.3, 0.4], '.repeat((8 << 20) / 22);
  const unterminated = `{"img1": [0.5, 0.5], "targets": [${vectors}`;
  t.ok(unterminated.length >= NATIVE_CHECK_MIN_BYTES);
  t.equal(await parseCalls(() => parseJsonBody(Buffer.from(unterminated))), 0, '8 MiB of unterminated JSON: no JSON.parse');
  t.match(await refusal(unterminated), { code: 'invalid_request', message: new RegExp(`the body is not valid JSON \\(EOF while parsing a value at byte ${unterminated.length}\\)$`) });
  const garbage = `{"targets": [${vectors}] x }`;
  t.match(await refusal(garbage), { code: 'invalid_request', message: /not valid JSON \(.* at byte \d+\)/ });
  t.equal(await parseCalls(() => parseJsonBody(Buffer.from(garbage))), 0, 'trailing garbage after 8 MiB: no JSON.parse');
  // What the check accepts, JSON.parse must accept too, or a body JSON.parse takes would be refused.
  const deep = `{"pad": "${'a'.repeat(NATIVE_CHECK_MIN_BYTES)}", "x": ${'['.repeat(300)}${']'.repeat(300)}, "s": "\\ud800"}`;
  t.equal(JSON.stringify(await parseJsonBody(Buffer.from(deep))), JSON.stringify(JSON.parse(deep)), 'deep nesting and a lone surrogate escape parse as JSON.parse parses them');
});

t.test('a large body with a bare NaN or Infinity is invalid_embedding, diagnosed from the bytes at the native error', async (t) => {
  const pad = `"pad": "${'a'.repeat(NATIVE_CHECK_MIN_BYTES)}"`;
  for (const [token, label] of [['NaN', 'NaN'], ['-Infinity', '-Infinity'], ['Infinity', 'Infinity'], ['   NaN', 'after whitespace']] as const) {
    const body = `{${pad}, "img2": [0.1, ${token}, 0.2]}`;
    t.match(await refusal(body), { code: 'invalid_embedding', message: NON_FINITE_DETAIL }, label);
    t.equal(await parseCalls(() => parseJsonBody(Buffer.from(body))), 0, `${label}: no JSON.parse`);
  }
  t.match(await refusal(`{${pad}, "img2": [0.1, Inf, 0.2]}`), { code: 'invalid_request' }, 'not a whole token');
  t.match(await refusal(`{${pad}, "img2": "NaN" x}`), { code: 'invalid_request' }, 'inside a string, broken elsewhere');
  t.equal(nonFiniteAtOffset(Buffer.from('[NaN]'), 1), true);
  t.equal(nonFiniteAtOffset(Buffer.from('[-Infinity]'), 2), true, 'serde_json stops after the minus');
  t.equal(nonFiniteAtOffset(Buffer.from('[1, 2'), 5), false);
});

t.test('a valid body parses as before, large or small, and forbidden keys are still refused', async (t) => {
  const value = { img1: 'a'.repeat(NATIVE_CHECK_MIN_BYTES), targets: [[0.1, -2.5e-7, 1e300]], nested: { a: [true, null, 'é😀'] } };
  const text = JSON.stringify(value);
  t.same(await parseJsonBody(Buffer.from(text)), value, 'large');
  t.equal(await parseCalls(() => parseJsonBody(Buffer.from(text))), 1, 'one JSON.parse for a large valid body');
  t.same(await parseJsonBody(Buffer.from('{"a": 1}')), { a: 1 }, 'small');
  t.match(await refusal(`{"pad": "${'a'.repeat(NATIVE_CHECK_MIN_BYTES)}", "__proto__": {"x": 1}}`), { code: 'invalid_request', message: /forbidden key/ });
  t.match(await refusal('{"a": 1'), { code: 'invalid_request', message: 'the body is not valid JSON' }, 'a small invalid body takes JSON.parse, as before');
  t.match(await refusal('[0.1, NaN]'), { code: 'invalid_embedding' }, 'and its NaN diagnosis');
  t.match(await refusal(''), { code: 'invalid_request', message: 'the JSON body is empty' });
});

/**
 * The NaN/Infinity diagnosis of JSON bodies (src/http/json-body.ts) reads the parse error and a
 * few characters around it, never the whole body (issue 24, item 1: the old diagnosis rebuilt a
 * 25 MiB invalid body one character at a time, 3.3 s of event loop and 964 MiB).
 */
import t from 'tap';
import { nonFiniteAtParseError } from '../src/http/json-body.js';

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

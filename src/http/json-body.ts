/**
 * JSON bodies, with one addition to Fastify's own parser (secure-json-parse, which refuses
 * `__proto__` and `constructor` keys): Python's json module, and so the vectors of many DeepFace
 * users, writes NaN and ±Infinity as the bare tokens `NaN`, `Infinity` and `-Infinity`, which are not
 * JSON. A body that fails to parse only because of such tokens holds non-finite embedding values, and
 * is refused as `400 invalid_embedding` saying so, instead of a bare "not valid JSON". The diagnosis
 * reads only the parse error and the few characters around it (nonFiniteAtParseError), so an
 * invalid body costs one failed JSON.parse, whatever its size.
 */
import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { ServiceError } from '../errors/index.js';

/**
 * How far either side of the parse error the diagnosis looks. V8 quotes 10 characters either side
 * of an unexpected token in its message; 16 covers the longest token (`-Infinity`) and its neighbours.
 */
const WINDOW = 16;

const IDENT = /[A-Za-z0-9_$]/;

/**
 * True when `win` holds a bare NaN, Infinity or -Infinity token starting at `at`: followed by
 * something that ends a value, and preceded (past whitespace) by what may come before a value in
 * JSON (`[`, `,`, `:`, or the start of the window). Inside a string JSON.parse would not have
 * stopped there, so the token is a value.
 */
function bareTokenAt(win: string, at: number): boolean {
  const token = win.startsWith('NaN', at) ? 'NaN' : win.startsWith('Infinity', at) ? 'Infinity' : null;
  if (!token) return false;
  const after = win[at + token.length];
  if (after !== undefined && IDENT.test(after)) return false;
  let i = at - 1;
  if (token === 'Infinity' && win[i] === '-') i--;
  while (i >= 0 && /\s/.test(win[i]!)) i--;
  return i < 0 || win[i] === '[' || win[i] === ',' || win[i] === ':';
}

/**
 * True when `err`, what JSON.parse threw for `text`, stopped at a bare NaN, Infinity or -Infinity
 * token (Python's json module writes non-finite floats that way). Only the error's own message and
 * at most 2 × WINDOW characters of `text` around the error's position are read, never the whole
 * body: an invalid body of 25 MiB costs the same as one of 25 bytes. The position comes from V8's
 * message (Node 20-24: `Unexpected token 'N', ..."<10 chars>N<10 chars>"... is not valid JSON`, which
 * quotes the neighbourhood, or `No number after minus sign in JSON at position P`; Node 18:
 * `Unexpected token N in JSON at position P`); a message of another shape is not diagnosed, and the
 * body is refused as plain invalid JSON.
 */
export function nonFiniteAtParseError(text: string, err: unknown): boolean {
  const message = err instanceof Error ? err.message : '';
  const minus = /^No number after minus sign in JSON at position (\d+)/.exec(message);
  if (minus) {
    const pos = Number(minus[1]);
    return bareTokenAt(text.slice(Math.max(0, pos - WINDOW), pos + WINDOW), Math.min(pos, WINDOW));
  }
  const old = /^Unexpected token ([NI]) in JSON at position (\d+)/.exec(message);
  if (old) {
    const pos = Number(old[2]);
    return bareTokenAt(text.slice(Math.max(0, pos - WINDOW), pos + WINDOW), Math.min(pos, WINDOW));
  }
  const quoted = /^Unexpected token '([NI])', (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(message);
  if (!quoted) return false;
  const [, , before, snippet = '', after] = quoted;
  // The quote is text[pos-10, pos+10), clipped at either end of the text; without either ellipsis it
  // is the whole (short) text, and the token may be any of its few N or I.
  if (before) return bareTokenAt(snippet, 10);
  if (after) return bareTokenAt(snippet, snippet.length - 10);
  for (let i = 0; i < snippet.length; i++) if (bareTokenAt(snippet, i)) return true;
  return false;
}

export const NON_FINITE_DETAIL = 'the body holds NaN or Infinity, which JSON cannot carry: every embedding value must be a finite number';

/**
 * Replaces the application/json parser of `app` with the library Fastify's own uses,
 * secure-json-parse, with Fastify's settings (`__proto__` and `constructor` keys refused), called
 * here so that a syntax error reaches the NaN/Infinity diagnosis with V8's message: Fastify's parser
 * replaces it with FST_ERR_CTP_INVALID_JSON_BODY, and the position of the error with it.
 */
export function useJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.length === 0) {
      done(new ServiceError('invalid_request', 'the JSON body is empty'), undefined);
      return;
    }
    let value: unknown;
    try {
      value = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      if (nonFiniteAtParseError(text, err)) done(new ServiceError('invalid_embedding', NON_FINITE_DETAIL, { cause: err }), undefined);
      else if (err instanceof SyntaxError && /forbidden prototype property|prototype pollution/i.test(err.message)) done(new ServiceError('invalid_request', 'the JSON body uses a forbidden key (__proto__ or constructor)', { cause: err }), undefined);
      else done(new ServiceError('invalid_request', 'the body is not valid JSON', { cause: err }), undefined);
      return;
    }
    done(null, value);
  });
}

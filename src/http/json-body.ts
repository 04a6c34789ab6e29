/**
 * JSON bodies, with one addition to Fastify's own parser (secure-json-parse, which refuses
 * `__proto__` and `constructor` keys): Python's json module, and so the vectors of many DeepFace
 * users, writes NaN and ±Infinity as the bare tokens `NaN`, `Infinity` and `-Infinity`, which are not
 * JSON. A body that fails to parse only because of such tokens holds non-finite embedding values, and
 * is refused as `400 invalid_embedding` saying so, instead of a bare "not valid JSON". The diagnosis
 * reads only the parse error and the few characters around it (nonFiniteAtParseError,
 * nonFiniteAtOffset), never the whole body. A large body's syntax is checked natively, off the event
 * loop, before JSON.parse sees it (NATIVE_CHECK_MIN_BYTES), so an invalid one costs the event loop
 * nothing but the diagnosis.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { ServiceError } from '../errors/index.js';
import { checkJsonSyntax } from '../native/json.js';
import { collectBody } from './body-collector.js';

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
 * Bodies from this size on have their syntax checked natively, on the libuv pool, before JSON.parse
 * runs on the event loop. JSON.parse builds every value it reads before it finds an error, so 64 MiB of
 * unterminated JSON held the event loop for seconds and grew the heap by hundreds of MiB (issue 24);
 * the check reads the bytes once and keeps nothing. Below this size a failed JSON.parse costs less than
 * the trip through the pool (bench/adversary measures both sides).
 */
export const NATIVE_CHECK_MIN_BYTES = 64 * 1024;

/**
 * True when the native check stopped at, or just after, a bare NaN, Infinity or -Infinity: serde_json
 * stops at the token's first letter (`expected value`), or for -Infinity at the letter after the minus
 * (`invalid number`). Reads 2 × WINDOW bytes around `offset`, never the body.
 */
export function nonFiniteAtOffset(body: Uint8Array, offset: number): boolean {
  const from = Math.max(0, offset - WINDOW);
  const win = Buffer.from(body.buffer, body.byteOffset + from, Math.min(body.length, offset + WINDOW) - from).toString('latin1');
  const at = offset - from;
  return bareTokenAt(win, at) || (at > 0 && bareTokenAt(win, at - 1));
}

/** The ServiceError for a body that is not valid JSON, given whether a bare non-finite token caused it. */
function notJson(nonFinite: boolean, reason: string, cause?: unknown): ServiceError {
  if (nonFinite) return new ServiceError('invalid_embedding', NON_FINITE_DETAIL, { cause });
  return new ServiceError('invalid_request', `the body is not valid JSON${reason ? ` (${reason})` : ''}`, { cause });
}

/**
 * Parses a JSON request body: a large one is first checked off the event loop (NATIVE_CHECK_MIN_BYTES),
 * then every body goes through secure-json-parse with Fastify's settings (`__proto__` and `constructor`
 * keys refused).
 */
export async function parseJsonBody(body: Buffer): Promise<unknown> {
  if (body.length === 0) throw new ServiceError('invalid_request', 'the JSON body is empty');
  if (body.length >= NATIVE_CHECK_MIN_BYTES) {
    const check = await checkJsonSyntax(body);
    if (!check.valid) throw notJson(nonFiniteAtOffset(body, check.offset), `${check.message} at byte ${check.offset}`);
  }
  const text = body.toString('utf8');
  try {
    return sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    if (err instanceof SyntaxError && /forbidden prototype property|prototype pollution/i.test(err.message)) throw new ServiceError('invalid_request', 'the JSON body uses a forbidden key (__proto__ or constructor)', { cause: err });
    throw notJson(nonFiniteAtParseError(text, err), '', err);
  }
}

/**
 * Replaces the application/json parser of `app` with parseJsonBody: secure-json-parse, the library
 * Fastify's own parser uses, called here so that a syntax error reaches the NaN/Infinity diagnosis
 * with V8's message (Fastify's parser replaces it with FST_ERR_CTP_INVALID_JSON_BODY), after the
 * native check of a large body. The body is read by collectBody into one buffer of its declared length
 * (Fastify's `parseAs: 'buffer'` held it twice), within the route's body limit.
 */
export function useJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', async (req: FastifyRequest, payload: IncomingMessage) =>
    parseJsonBody(await collectBody(payload, req.headers['content-length'], req.routeOptions.bodyLimit)),
  );
}

/**
 * JSON bodies, with one addition to Fastify's own parser (secure-json-parse, which refuses
 * `__proto__` and `constructor` keys): Python's json module, and so the vectors of many DeepFace
 * users, writes NaN and ±Infinity as the bare tokens `NaN`, `Infinity` and `-Infinity`, which are not
 * JSON. A body that fails to parse only because of such tokens holds non-finite embedding values, and
 * is refused as `400 invalid_embedding` saying so, instead of a bare "not valid JSON". The diagnosis
 * reads only the parse error and the few characters around it (nonFiniteAtParseError,
 * nonFiniteAtOffset), never the whole body.
 *
 * A large body (NATIVE_CHECK_MIN_BYTES) is read natively, off the event loop, before JSON.parse sees
 * it (crates/facecompute-core/src/json): its syntax is checked, so an invalid one costs the event
 * loop nothing but the diagnosis; its values are counted, so one that would hold the loop for longer
 * than its share is refused unparsed (`maxValues`); and where the route asks for it, top-level members
 * are taken out and JSON.parse reads only the rest of the text: rows of numbers (/compare's `targets`)
 * as float32, a plain ASCII string (`targets_b64`) as its bytes. JSON.parse costs about 130 ns per
 * number: 64 MiB of targets held the loop for 0.9–2.9 s, 64 MiB of targets_b64 0.18–1.26 s.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { ServiceError } from '../errors/index.js';
import { scanJsonBody, type LiftedRows, type LiftMembers } from '../native/json.js';
import { collectBody, type BodyBuffers } from './body-collector.js';
import { JsonArrayWatch, tooManyValues } from './json-array-watch.js';

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
 * Bodies from this size on are read natively, on the libuv pool, before JSON.parse runs on the event
 * loop. JSON.parse builds every value it reads before it finds an error, so 64 MiB of unterminated
 * JSON held the event loop for seconds and grew the heap by hundreds of MiB; the check
 * reads the bytes once and keeps nothing. Below this size a failed JSON.parse costs less than the trip
 * through the pool (bench/adversary measures both sides), and a body holds at most about 32,000 values.
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

/** How a body is read: its value budget, and the top-level member to take out as rows, if any. */
export interface ReadJsonOptions {
  /** Most values (arrays, objects, keys, strings, numbers, literals) JSON.parse may build, outside the lifted rows. */
  maxValues: number;
  /** Top-level members to take out (/compare's `targets` as rows, `targets_b64` as text). */
  lift?: LiftMembers | undefined;
}

/** What was taken out of a body; each member taken out is absent from the parsed value. */
export interface LiftedMembers {
  rows?: LiftedRows;
  /** The string's characters, a view of the body's bytes (ASCII, no escapes). */
  text?: Buffer;
}

/** A parsed body, and what was taken out of it. */
export interface JsonBody {
  value: unknown;
  lifted?: LiftedMembers;
}

/** With no budget given (tests, and callers that bound bodies otherwise): any number of values. */
const UNBOUNDED: ReadJsonOptions = { maxValues: 2 ** 32 - 1 };

/**
 * Reads a JSON request body: a large one is first read off the event loop (NATIVE_CHECK_MIN_BYTES:
 * syntax, value budget, lifted rows), then the text, or what is left of it, goes through
 * secure-json-parse with Fastify's settings (`__proto__` and `constructor` keys refused).
 *
 * A lifted member leaves the text as `null`: it is the member's last occurrence (JSON.parse keeps the
 * last of duplicate keys), so the parsed member is that `null`, and it is deleted. What is lifted is
 * what the schema accepts without question (rows of 1 to 65,536 finite numbers; any string) and holds
 * no keys, so the rest of the body is validated and refused exactly as the whole body would be
 * (test/json-lift.test.ts compares both).
 */
export async function readJsonBody(body: Buffer, options: ReadJsonOptions = UNBOUNDED): Promise<JsonBody> {
  if (body.length === 0) throw new ServiceError('invalid_request', 'the JSON body is empty');
  let text: string;
  let lifted: LiftedMembers | undefined;
  if (body.length >= NATIVE_CHECK_MIN_BYTES) {
    const scan = await scanJsonBody(body, options.lift ?? {}, options.maxValues);
    if (!scan.valid) throw notJson(nonFiniteAtOffset(body, scan.offset), `${scan.message} at byte ${scan.offset}`);
    if (scan.over) throw tooManyValues(options.maxValues);
    const spans = [scan.lifted, scan.liftedText].filter((s) => s !== undefined).sort((a, b) => a.start - b.start);
    if (spans.length > 0) {
      lifted = { ...(scan.lifted ? { rows: scan.lifted } : {}), ...(scan.liftedText ? { text: body.subarray(scan.liftedText.start + 1, scan.liftedText.end - 1) } : {}) };
      const pieces: Buffer[] = [];
      let at = 0;
      for (const s of spans) {
        pieces.push(body.subarray(at, s.start), NULL);
        at = s.end;
      }
      pieces.push(body.subarray(at));
      text = Buffer.concat(pieces).toString('utf8');
    } else {
      text = body.toString('utf8');
    }
  } else {
    text = body.toString('utf8');
  }
  let value: unknown;
  try {
    value = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    if (err instanceof SyntaxError && /forbidden prototype property|prototype pollution/i.test(err.message)) throw new ServiceError('invalid_request', 'the JSON body uses a forbidden key (__proto__ or constructor)', { cause: err });
    throw notJson(nonFiniteAtParseError(text, err), '', err);
  }
  if (!lifted) return { value };
  const v = value as Record<string, unknown>;
  if (lifted.rows) delete v[options.lift!.rows!];
  if (lifted.text) delete v[options.lift!.text!];
  return { value, lifted };
}

const NULL = Buffer.from('null');

/** Bodies from this declared size on, and chunked ones, are watched as they arrive (json-array-watch.ts). */
export const WATCH_MIN_BYTES = 1024 * 1024;

/** readJsonBody's value, for a body read without lifting. */
export async function parseJsonBody(body: Buffer, options: Pick<ReadJsonOptions, 'maxValues'> = UNBOUNDED): Promise<unknown> {
  return (await readJsonBody(body, { maxValues: options.maxValues })).value;
}

/** The parser's settings for one app: the value budget, where large bodies are read to, and which requests lift which member to where. */
export interface JsonBodyParserOptions {
  maxValues: number;
  /** Resident buffers for large bodies (src/service/buffer-pool.ts through the compute service). */
  buffers?: BodyBuffers;
  lift?: {
    /** The top-level members this request's body has taken out, if any (by route). */
    members(req: FastifyRequest): LiftMembers | undefined;
    /**
     * Hands what was taken out to the request's owner of it. `holder`: the pooled body buffer that
     * `lifted.text` is a view of, the owner's to give back to `buffers` (null when not pooled).
     */
    take(req: FastifyRequest, lifted: LiftedMembers, holder: Buffer | null): void;
  };
}

/**
 * Replaces the application/json parser of `app` with readJsonBody: secure-json-parse, the library
 * Fastify's own parser uses, called here so that a syntax error reaches the NaN/Infinity diagnosis
 * with V8's message (Fastify's parser replaces it with FST_ERR_CTP_INVALID_JSON_BODY), after the
 * native reading of a large body (syntax, value budget, lifted rows). The body is read by collectBody into one buffer of its declared length
 * (Fastify's `parseAs: 'buffer'` held it twice), within the route's body limit.
 */
export function useJsonBodyParser(app: FastifyInstance, options: JsonBodyParserOptions): void {
  app.removeContentTypeParser('application/json');
  const { buffers } = options;
  app.addContentTypeParser('application/json', async (req: FastifyRequest, payload: IncomingMessage) => {
    // The pooled buffer a large body was read into, if any: given back once parsed, unless the lifted
    // text is a view of it, when the request's owner of that text gives it back.
    let pooled: Buffer | null = null;
    const from = buffers && { acquire: (n: number) => (pooled = buffers.acquire(n)), release: (b: Uint8Array) => ((pooled = null), buffers.release(b)) };
    // A large or chunked body is watched as it arrives (json-array-watch.ts): an array whose length
    // alone decides the 413 is refused before the rest of the body is kept.
    const declared = Number(req.headers['content-length']);
    const members = options.lift?.members(req);
    const watch = !(declared < WATCH_MIN_BYTES)
      ? new JsonArrayWatch({ maxValues: options.maxValues, ...(members?.rows && members.maxRows !== undefined ? { member: { name: members.rows, maxElements: members.maxRows } } : {}) })
      : undefined;
    const body = await collectBody(payload, req.headers['content-length'], req.routeOptions.bodyLimit, from, watch);
    try {
      const r = await readJsonBody(body, { maxValues: options.maxValues, lift: members });
      if (r.lifted) {
        options.lift!.take(req, r.lifted, r.lifted.text ? pooled : null);
        if (r.lifted.text) pooled = null;
      }
      return r.value;
    } finally {
      if (pooled) buffers!.release(pooled);
    }
  });
}

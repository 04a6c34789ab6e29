/**
 * Refuses a JSON body while it arrives, from the first array longer than any valid body holds,
 * instead of once it is whole. The body reader (body-collector.ts) keeps the whole body before the
 * native scan counts its values, so a 64 MiB /compare of one targets row of 16 million numbers cost
 * `serve` 64 MiB of resident memory before its 413 (72 MiB measured in the round-2 adversary run,
 * over the +64 MiB goal). An array can be refused before its end when its length alone decides the
 * answer:
 *   - more elements than the value budget (FACECOMPUTE_MAX_JSON_VALUES): no row of that length can
 *     be lifted (65,536 numbers at most), so every element counts against the budget: 413
 *     request_too_large, as the native scan says;
 *   - /compare's top-level `targets` with more rows than FACECOMPUTE_MAX_TARGETS: 413
 *     too_many_targets, as the compare service says.
 *
 * Only JSON's structure is followed (strings, with escapes, brackets and commas); the full grammar
 * is still checked once the body is whole. Inside a string the reader jumps from quote to quote
 * (Buffer.indexOf), so base64 images cost little; outside strings it reads byte by byte, about a
 * nanosecond each, in the chunk sizes the socket delivers. Nesting is followed to any depth and
 * arrays are counted to MAX_TRACKED_DEPTH, past which nothing valid goes.
 */
import { ServiceError } from '../errors/index.js';

const MAX_TRACKED_DEPTH = 64;
/** The longest top-level key remembered: enough for any member name a route asks about. */
const MAX_KEY_BYTES = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

export interface ArrayLimits {
  /** The value budget: an array with more elements is refused (request_too_large). */
  maxValues: number;
  /** A top-level member whose array has its own limit (/compare's targets). */
  member?: { name: string; maxElements: number };
}

export class JsonArrayWatch {
  private depth = 0;
  private inString = false;
  /** The previous byte, inside a string, was a backslash that escapes the next one. */
  private escape = false;
  private readonly isArray = new Uint8Array(MAX_TRACKED_DEPTH + 1);
  /** Elements of the array open at each depth (counted from its commas: the first is assumed). */
  private readonly count = new Float64Array(MAX_TRACKED_DEPTH + 1);
  /** Per depth: the array is the watched member's (its limit applies). */
  private readonly isMember = new Uint8Array(MAX_TRACKED_DEPTH + 1);
  private stringAtTop: number[] | null = null;
  private lastString = '';
  private lastKey = '';

  constructor(private readonly limits: ArrayLimits) {}

  /** Reads the next chunk; the refusal once an array has passed its limit (the reader then stops). */
  feed(chunk: Buffer): ServiceError | null {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.inString) {
        i = this.readString(chunk, i);
        continue;
      }
      const c = chunk[i]!;
      i++;
      switch (c) {
        case QUOTE:
          this.inString = true;
          this.stringAtTop = this.depth === 1 ? [] : null;
          break;
        case OPEN_ARRAY:
        case OPEN_OBJECT: {
          const d = ++this.depth;
          if (d > MAX_TRACKED_DEPTH) break;
          this.isArray[d] = c === OPEN_ARRAY ? 1 : 0;
          this.count[d] = 1;
          this.isMember[d] = c === OPEN_ARRAY && d === 2 && this.limits.member !== undefined && this.lastKey === this.limits.member.name ? 1 : 0;
          break;
        }
        case CLOSE_ARRAY:
        case CLOSE_OBJECT:
          if (this.depth > 0) this.depth--;
          break;
        case COLON:
          if (this.depth === 1) this.lastKey = this.lastString;
          break;
        case COMMA: {
          const d = this.depth;
          if (d === 0 || d > MAX_TRACKED_DEPTH || this.isArray[d] === 0) break;
          const elements = ++this.count[d]!;
          const refusal = this.refusal(d, elements);
          if (refusal) return refusal;
          break;
        }
        default:
          break;
      }
    }
    return null;
  }

  /** Reads string bytes from `i`; returns where reading goes on (past the closing quote, or `chunk.length`). */
  private readString(chunk: Buffer, i: number): number {
    const n = chunk.length;
    if (this.escape) {
      this.escape = false;
      this.keep(chunk, i, i + 1);
      return i + 1;
    }
    for (;;) {
      const q = chunk.indexOf(QUOTE, i);
      if (q < 0) {
        this.escape = backslashesBefore(chunk, n, i) % 2 === 1;
        this.keep(chunk, i, n);
        return n;
      }
      if (backslashesBefore(chunk, q, i) % 2 === 1) {
        this.keep(chunk, i, q + 1);
        i = q + 1;
        continue;
      }
      this.keep(chunk, i, q);
      this.inString = false;
      if (this.stringAtTop) this.lastString = Buffer.from(this.stringAtTop).toString('latin1');
      this.stringAtTop = null;
      return q + 1;
    }
  }

  /** Keeps the bytes of a top-level string (a key), up to MAX_KEY_BYTES. */
  private keep(chunk: Buffer, from: number, to: number): void {
    const s = this.stringAtTop;
    if (!s) return;
    for (let k = from; k < to && s.length <= MAX_KEY_BYTES; k++) s.push(chunk[k]!);
  }

  private refusal(d: number, elements: number): ServiceError | null {
    const member = this.limits.member;
    if (member && this.isMember[d] === 1 && elements > member.maxElements) {
      return new ServiceError('too_many_targets', `${member.name} holds more than ${member.maxElements} vectors; the limit is ${member.maxElements}`);
    }
    return elements > this.limits.maxValues ? tooManyValues(this.limits.maxValues) : null;
  }
}

/** A JSON body over its value budget, whoever found it (this watch or the native scan). */
export function tooManyValues(maxValues: number): ServiceError {
  return new ServiceError(
    'request_too_large',
    `the JSON body holds more than ${maxValues} values (numbers, strings, arrays, objects and keys); send many vectors as /compare's targets, targets_b64 or a binary targets part, or split the request`,
  );
}

/** How many backslashes run back from `end` (exclusive) to no further than `start`. */
function backslashesBefore(chunk: Buffer, end: number, start: number): number {
  let k = end - 1;
  while (k >= start && chunk[k] === BACKSLASH) k--;
  return end - 1 - k;
}

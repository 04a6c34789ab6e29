/**
 * Tool arguments are checked here, not by the SDK, so that a bad argument is a tool error with the
 * REST codes (`{error, detail}` in structuredContent) instead of the SDK's free text: an unknown
 * argument is `invalid_request` naming it, as an unknown field is on REST; a value inside an
 * embedding that is not a finite number is `invalid_embedding`; an empty embedding is
 * `embedding_dimension_mismatch`. Issues are located by walking the tool's zod schema along their
 * path, so an embedding is recognised by its schema, wherever it sits.
 */
import type { z } from 'zod';
import { ServiceError } from '../errors/index.js';

type Schema = z.ZodType;
type Issue = z.core.$ZodIssue;
type Def = { type: string; innerType?: Schema; shape?: Record<string, Schema>; element?: Schema; options?: Schema[] };

const def = (s: Schema | undefined): Def | undefined => (s as unknown as { def?: Def } | undefined)?.def;

/** Sees through optional(), nullable() and default(): they do not change what a value must be. */
function unwrap(s: Schema | undefined): Schema | undefined {
  let n = s;
  for (let d = def(n); d && (d.type === 'optional' || d.type === 'nullable' || d.type === 'default') && d.innerType; d = def(n)) n = d.innerType;
  return n;
}

function child(s: Schema | undefined, seg: PropertyKey): Schema | undefined {
  const d = def(unwrap(s));
  if (d?.type === 'object' && typeof seg === 'string') return unwrap(d.shape?.[seg]);
  if (d?.type === 'array' && typeof seg === 'number') return unwrap(d.element);
  return undefined;
}

/** 'source.embedding[3]', like the REST details. */
export function argumentName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out || 'arguments';
}

interface Located {
  issue: Issue;
  path: PropertyKey[];
  /** The schemas from the argument object down to the value the issue is about. */
  chain: Array<Schema | undefined>;
  /** Reported from one branch of a union: the value may have been meant for another branch. */
  inUnion: boolean;
}

function locate(issues: readonly Issue[], base: PropertyKey[], baseChain: Array<Schema | undefined>, inUnion: boolean, out: Located[]): void {
  for (const issue of issues) {
    const path = [...base, ...(issue.path as PropertyKey[])];
    const chain = [...baseChain];
    for (const seg of issue.path as PropertyKey[]) chain.push(child(chain[chain.length - 1], seg));
    if (issue.code === 'invalid_union') {
      const options = def(unwrap(chain[chain.length - 1]))?.options ?? [];
      issue.errors.forEach((branch, i) => locate(branch, path, [...chain.slice(0, -1), unwrap(options[i])], true, out));
    } else {
      out.push({ issue, path, chain, inUnion });
    }
  }
}

function valueAt(args: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = args;
  for (const p of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[p] : undefined;
  return v;
}

/**
 * The contract error for arguments that failed `schema` (a strict zod object); `embedding` is the
 * schema instance every embedding argument uses.
 */
export function argumentsError(schema: Schema, embedding: Schema, args: unknown, error: z.ZodError): ServiceError {
  const located: Located[] = [];
  locate(error.issues, [], [unwrap(schema)], false, located);

  const unknown = located.find((l) => l.issue.code === 'unrecognized_keys');
  if (unknown && unknown.issue.code === 'unrecognized_keys') {
    const names = unknown.issue.keys.map((k) => `'${argumentName([...unknown.path, k])}'`);
    return new ServiceError('invalid_request', `unknown argument${names.length > 1 ? 's' : ''} ${names.join(', ')}; see the tool's input schema`);
  }

  for (const l of located) {
    const at = l.chain[l.chain.length - 1];
    const f = argumentName(l.path);
    if (l.chain[l.chain.length - 2] === embedding && at !== embedding) {
      return new ServiceError('invalid_embedding', `${f} is not a finite number (NaN, Infinity and non-numbers are refused)`);
    }
    // zod reports an empty array in an image-or-embedding union at the union itself.
    const arrayInUnion = (l.issue.code === 'too_small' || l.issue.code === 'too_big') && l.issue.origin === 'array' && (def(at)?.options ?? []).some((o) => unwrap(o) === embedding);
    if (at !== embedding && !arrayInUnion) continue;
    if (l.issue.code === 'too_small') return new ServiceError('embedding_dimension_mismatch', `${f} holds no numbers; an embedding has as many as the model has dimensions (see get_capabilities embedding_dims)`);
    if (l.issue.code === 'too_big') return new ServiceError('embedding_dimension_mismatch', `${f} holds more numbers than any model has dimensions`);
    // In a union (an image or an embedding) a value of another type may have been meant as the image.
    if (l.issue.code === 'invalid_type' && !l.inUnion && valueAt(args, l.path) !== undefined) return new ServiceError('invalid_embedding', `${f} must be an embedding: an array of finite numbers`);
  }

  const first = located[0];
  if (!first) return new ServiceError('invalid_request', 'the arguments are not valid');
  const f = argumentName(first.path);
  if (valueAt(args, first.path) === undefined && first.issue.code === 'invalid_type') return new ServiceError('invalid_request', `missing required argument '${f}'`);
  if (first.inUnion || located.some((l) => l !== first && l.path.join('.') === first.path.join('.'))) {
    return new ServiceError('invalid_request', `argument '${f}' has the wrong type; see the tool's input schema`);
  }
  return new ServiceError('invalid_request', `argument '${f}': ${first.issue.message}`);
}

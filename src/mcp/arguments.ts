/**
 * Tool arguments are checked here, not by the SDK, so that a bad argument is a tool error with the
 * REST codes (`{error, detail}` in structuredContent) instead of the SDK's free text: an unknown
 * argument is `invalid_request` naming it, as an unknown field is on REST; a value inside an
 * embedding that is not a finite number is `invalid_embedding`, an empty embedding
 * `embedding_dimension_mismatch` (both from bounded-arrays.ts, before zod).
 */
import type { z } from 'zod';
import { ServiceError } from '../errors/index.js';
import { arrayArgumentsError, type ArrayLimits } from './bounded-arrays.js';
import { TOOL_INPUTS, type ToolName } from './tools.js';

type Issue = z.core.$ZodIssue;

/** 'source.embedding[3]', like the REST details. */
export function argumentName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out || 'arguments';
}

interface Located {
  issue: Issue;
  path: PropertyKey[];
  /** Reported from one branch of a union: the value may have been meant for another branch. */
  inUnion: boolean;
}

/** Every issue, with those of each union branch in its place. */
function locate(issues: readonly Issue[], base: PropertyKey[], inUnion: boolean, out: Located[]): void {
  for (const issue of issues) {
    const path = [...base, ...(issue.path as PropertyKey[])];
    if (issue.code === 'invalid_union') issue.errors.forEach((branch) => locate(branch, path, true, out));
    else out.push({ issue, path, inUnion });
  }
}

function valueAt(args: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = args;
  for (const p of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[p] : undefined;
  return v;
}

/**
 * The contract error for arguments that failed a tool's strict zod schema. Embeddings never get
 * here with a bad value (bounded-arrays.ts refuses them first), so this names unknown arguments,
 * missing ones, and values of the wrong type.
 */
export function argumentsError(args: unknown, error: z.ZodError): ServiceError {
  const located: Located[] = [];
  locate(error.issues, [], false, located);

  const unknown = located.find((l) => l.issue.code === 'unrecognized_keys');
  if (unknown && unknown.issue.code === 'unrecognized_keys') {
    const names = unknown.issue.keys.map((k) => `'${argumentName([...unknown.path, k])}'`);
    return new ServiceError('invalid_request', `unknown argument${names.length > 1 ? 's' : ''} ${names.join(', ')}; see the tool's input schema`);
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

/**
 * A tool's arguments, checked: the arrays against the REST limits and every embedding's values first
 * (bounded-arrays.ts: a refusal reads up to the first bad value), then the rest by the tool's zod
 * schema. Throws the contract error.
 */
export function parseArguments(tool: ToolName, args: Record<string, unknown>, limits: ArrayLimits): unknown {
  const bounded = arrayArgumentsError(tool, args, limits);
  if (bounded) throw bounded;
  const schema = TOOL_INPUTS[tool];
  const parsed = schema.safeParse(args);
  if (!parsed.success) throw argumentsError(args, parsed.error);
  return parsed.data;
}

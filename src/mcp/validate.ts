/**
 * Tool arguments are validated here, not by the SDK, so that a bad argument is a tool error with the
 * REST codes (`{error, detail}` in structuredContent) instead of the SDK's free text. The validator is
 * Ajv compiled from the tools' JSON Schemas, which are the REST schemas' own field schemas
 * (src/vocabulary/schemas.ts, see tools.ts), with the options the gateway gives Fastify's Ajv: it
 * stops at the first error (allErrors: false), so a refusal reports one issue, whatever follows.
 * Embeddings and array lengths are checked before it (bounded-arrays.ts), with their own codes.
 */
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import { ServiceError } from '../errors/index.js';
import { fieldName } from '../http/error-handler.js';

export type { ValidateFunction };

const ajv = new Ajv({ removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, unicode: false, strict: false });

/** A validator typed by the schema it was compiled from (`T` is FromSchema of it). */
export function compileArguments<T>(schema: SchemaObject): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}

/** 'source.embedding[3]', as the REST details name fields, from an Ajv instance path and an optional key. */
export const argumentName = (instancePath: string, key?: string): string => fieldName(instancePath, key, 'arguments');

/**
 * The contract error for arguments their tool's schema refused: an unknown argument is
 * `invalid_request` naming it, as an unknown field is on REST; then a missing one; then a value of
 * the wrong type. Ajv reports the errors of every branch of a union before the union's own, so an
 * unknown key inside one branch (a face object) is found first, as the REST error handler finds it.
 */
export function argumentsError(errors: readonly ErrorObject[] | null | undefined): ServiceError {
  const all = errors ?? [];
  const unknown = all.find((e) => e.keyword === 'additionalProperties');
  if (unknown) return new ServiceError('invalid_request', `unknown argument '${argumentName(unknown.instancePath, String(unknown.params['additionalProperty']))}'; see the tool's input schema`);
  // A `required` inside a oneOf (a face's img or embedding) is that oneOf's branch, not a missing argument.
  const missing = all.find((e) => e.keyword === 'required' && !e.schemaPath.includes('/oneOf/'));
  if (missing) return new ServiceError('invalid_request', `missing required argument '${argumentName(missing.instancePath, String(missing.params['missingProperty']))}'`);
  const oneOf = all.find((e) => e.keyword === 'oneOf');
  if (oneOf) return new ServiceError('invalid_request', `argument '${argumentName(oneOf.instancePath)}' must hold exactly one of img or embedding`);
  const union = all.find((e) => e.keyword === 'anyOf');
  const first = all[0];
  if (!first) return new ServiceError('invalid_request', 'the arguments are not valid');
  if (union || first.keyword === 'type') return new ServiceError('invalid_request', `argument '${argumentName((union ?? first).instancePath)}' has the wrong type; see the tool's input schema`);
  return new ServiceError('invalid_request', `argument '${argumentName(first.instancePath)}' ${first.message ?? 'is not valid'}`);
}

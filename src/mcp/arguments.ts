/**
 * A tool's arguments, checked by name: the arrays against the REST limits and every embedding's
 * values first (bounded-arrays.ts: a refusal reads up to the first bad value), then the tool's JSON
 * Schema (validate.ts). Throws the contract error; returns the arguments the schema passed.
 */
import type { ArrayLimits } from './bounded-arrays.js';
import { TOOLS, type ToolName } from './tools.js';

export function parseArguments(tool: ToolName, args: Record<string, unknown>, limits: ArrayLimits): unknown {
  return TOOLS[tool].parse(args, limits);
}

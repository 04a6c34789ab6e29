/**
 * Each compute tool's outputSchema in tools/list: the REST answer's JSON Schema (src/vocabulary/schemas.ts),
 * since a tool's structuredContent is the REST answer unchanged. Listed without `$id` (a client compiles
 * every tool's schema into one validator set, where a repeated or foreign id would clash).
 */
import { capabilitiesResponse, compareResponse, representResponse, verifyResponse } from '../vocabulary/schemas.js';
import type { ToolName } from './tools.js';

type Listed = { type: 'object'; [k: string]: unknown };

function listed(schema: { $id?: string; type: 'object' }): Listed {
  const { $id: _id, ...rest } = structuredClone(schema) as { $id?: string; type: 'object' };
  return rest;
}

export const TOOL_OUTPUTS: Record<ToolName, Listed> = {
  get_capabilities: listed(capabilitiesResponse),
  verify_faces: listed(verifyResponse),
  represent_face: listed(representResponse),
  compare_inputs: listed(compareResponse),
};

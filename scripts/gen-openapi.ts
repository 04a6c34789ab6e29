/** Writes openapi.json at the repository root from src/http/openapi.ts. Run: node --import tsx scripts/gen-openapi.ts */
import { writeFileSync } from 'node:fs';
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '../src/http/openapi.js';
import { VERSION } from '../src/gateway/app.js';
import { gatewayLimits } from '../src/service/configured.js';
import { loadConfig } from '../src/config/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export function renderOpenApi(): string {
  return JSON.stringify(buildOpenApi(VERSION, { limits: { ...gatewayLimits(loadConfig({})) } }), null, 2) + '\n';
}
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(resolve(root, 'openapi.json'), renderOpenApi());
  process.stdout.write('wrote openapi.json\n');
}

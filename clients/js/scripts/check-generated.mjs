/**
 * Fails when src/generated/openapi.ts is not what openapi-typescript makes of ../../openapi.json now:
 * the service's document changed and the client's types were not regenerated (`npm run generate`).
 * Regenerates into a temporary file and compares; prints the first differing lines.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// As package.json's generate script: a field with a documented default stays optional in the request types.
const GENERATE_FLAGS = ['--default-non-nullable=false'];
const committed = join(root, 'src', 'generated', 'openapi.ts');
const dir = mkdtempSync(join(tmpdir(), 'fc-openapi-ts-'));
try {
  const fresh = join(dir, 'openapi.ts');
  const bin = join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
  execFileSync(process.execPath, [bin, process.env.FC_OPENAPI_JSON ?? join(root, '..', '..', 'openapi.json'), ...GENERATE_FLAGS, '--output', fresh], { stdio: ['ignore', 'ignore', 'inherit'] });
  const a = readFileSync(committed, 'utf8').split('\n');
  const b = readFileSync(fresh, 'utf8').split('\n');
  const diff = [];
  for (let i = 0; i < Math.max(a.length, b.length) && diff.length < 20; i++) if (a[i] !== b[i]) diff.push(`line ${i + 1}:\n  committed: ${a[i] ?? '(none)'}\n  generated: ${b[i] ?? '(none)'}`);
  if (diff.length > 0) {
    console.error(`src/generated/openapi.ts is out of date with openapi.json: run \`npm run generate\` in clients/js\n${diff.join('\n')}`);
    process.exit(1);
  }
  console.log('src/generated/openapi.ts matches openapi.json');
} finally {
  rmSync(dir, { recursive: true, force: true });
}

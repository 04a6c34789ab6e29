/**
 * The package's root directory, from the sources (src/…, run by tsx) or the build (dist/src/…): the
 * nearest ancestor whose package.json is facecompute's. Files that live beside package.json (the
 * addon loader index.js, models/, bin/, openapi.json) are found from here, never by counting "..".
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'facecompute') return dir;
      } catch {
        // an unreadable package.json is not ours; keep looking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('facecompute: cannot find the package root (package.json)');
    dir = up;
  }
}

export const PACKAGE_ROOT: string = find();

/** package.json's version: /health and the MCP server info report it. */
export const PACKAGE_VERSION: string = (() => {
  try {
    const p = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: string };
    return p.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
})();

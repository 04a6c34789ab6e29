/**
 * Loads the N-API addon built from crates/facecompute-node. The rest of the code imports the typed
 * wrappers beside this file (image.ts, compare.ts, detect.ts), never the addon directly, so that
 * native errors are always turned into ServiceErrors in one place.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';

const require = createRequire(import.meta.url);

// The generated loader lives at the package root (index.js, typed by index.d.ts), both for the
// sources and for the build under dist/.
export const native: typeof import('../../index.js') = require(join(PACKAGE_ROOT, 'index.js'));

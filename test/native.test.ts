import t from 'tap';
import { native } from '../src/native/addon.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

t.test('the addon loads and matches the core crate version', async (t) => {
  const cargo = readFileSync(resolve(REPO_ROOT, 'crates/facecompute-core/Cargo.toml'), 'utf8');
  const version = /^version = "([^"]+)"/m.exec(cargo)?.[1];
  t.equal(native.coreVersion(), version);
});

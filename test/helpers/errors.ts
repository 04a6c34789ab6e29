import type { Test } from 'tap';
import { ServiceError } from '../../src/errors/index.js';

/** Asserts that `p` rejects with a ServiceError of `code`, optionally with a detail matching `detail`. */
export async function rejectsCode(t: Test, p: Promise<unknown>, code: string, detail?: RegExp, message?: string): Promise<ServiceError | undefined> {
  try {
    await p;
  } catch (err) {
    const ok = err instanceof ServiceError && err.code === code && (!detail || detail.test(err.detail));
    t.ok(ok, message ?? `rejects with ${code}${detail ? ` ${detail}` : ''}`, ok ? {} : { found: String(err) });
    return err instanceof ServiceError ? err : undefined;
  }
  t.fail(message ?? `expected ${code}, but it resolved`);
  return undefined;
}

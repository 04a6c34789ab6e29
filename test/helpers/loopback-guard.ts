/**
 * Access to the loopback guard that test/setup/loopback-only.mjs installs in every test process, for
 * the tests that prove it and the tests that assert where production code tried to connect.
 */
interface Attempt { host: string; port: number; allowed: boolean }
interface Refusal { kind: string; target: string; expected: boolean }
interface GuardState { refused: Refusal[]; expecting: number; attempts: Attempt[]; installed: boolean }

function guardState(): GuardState {
  const state = (globalThis as Record<symbol, unknown>)[Symbol.for('facecompute.loopback-guard')] as GuardState | undefined;
  if (!state?.installed) {
    throw new Error('the loopback guard is not installed: run the tests with tap (package.json tap.node-arg preloads test/setup/loopback-only.mjs)');
  }
  return state;
}

export function guardInstalled(): boolean {
  return guardState().installed;
}

/**
 * Runs `fn` with refusals expected (they do not fail the process) and returns what was attempted: every
 * connect (its address after any lookup, allowed or not) and every refusal, in order.
 */
export async function withExpectedRefusals<T>(fn: () => Promise<T>): Promise<{ result: T | undefined; error: unknown; attempts: Attempt[]; refused: Refusal[] }> {
  const state = guardState();
  const refusedBefore = state.refused.length;
  const attemptsBefore = state.attempts.length;
  state.expecting++;
  try {
    let result: T | undefined;
    let error: unknown;
    try {
      result = await fn();
    } catch (err) {
      error = err;
    }
    // Refusals of sockets are delivered on the next tick; let them land inside the window.
    await new Promise((r) => setImmediate(r));
    return { result, error, attempts: state.attempts.slice(attemptsBefore), refused: state.refused.slice(refusedBefore) };
  } finally {
    state.expecting--;
    if (state.expecting === 0) state.attempts.length = 0;
  }
}

/** The environment of a child that is expected to be refused (it must not fail the run). */
export const EXPECT_REFUSALS_ENV = { TEST_LOOPBACK_GUARD_EXPECT: '1' } as const;

/**
 * Refuses, as the guard refuses its own, an attempt a fence in this process stopped on another's behalf
 * (Chromium's request routing): recorded, printed, logged to TEST_LOOPBACK_GUARD_LOG, and failing the
 * process unless refusals are expected.
 */
export function refuseOffLoopback(kind: string, target: string): Error {
  return (guardState() as GuardState & { refuse: (kind: string, target: string) => Error }).refuse(kind, target);
}

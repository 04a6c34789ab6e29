/**
 * The services some tests need (Redis, PostgreSQL, stripe-mock). `bash scripts/bootstrap.sh test` starts
 * Redis and PostgreSQL (scripts/test-services.sh) and installs stripe-mock before any test runs. A test
 * whose service is missing FAILS, naming the service and the command that provides it: never a skip,
 * and the same with CI set or not, so that a person whose services did not start is told, not handed
 * fewer tests than CI ran.
 */
import { connect } from 'node:net';
import type { Test } from 'tap';

export const START_TEST_SERVICES = '`source scripts/test-services.sh; start_test_services` (bash scripts/bootstrap.sh test does it)';

export type ServiceName = 'Redis' | 'PostgreSQL';

const ENV: Record<ServiceName, string> = { Redis: 'FACECOMPUTE_TEST_REDIS_URL', PostgreSQL: 'FACECOMPUTE_TEST_DATABASE_URL' };

/** Why `url`'s host:port does not accept a connection, or null when it does (loopback only: tests never dial out). */
function unreachable(url: string): Promise<string | null> {
  let host: string;
  let port: number;
  try {
    const u = new URL(url);
    host = u.hostname;
    port = Number(u.port);
  } catch {
    return Promise.resolve(`'${url}' is not a URL`);
  }
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (why: string | null) => {
      s.destroy();
      resolve(why);
    };
    s.setTimeout(2000, () => done('no answer in 2 s'));
    s.once('connect', () => done(null));
    s.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

/** The message of a missing service: what is missing and the command that starts it. */
export function missingService(name: ServiceName, why: string): string {
  return `${name} is required by this test and ${why}: start it with ${START_TEST_SERVICES}`;
}

/**
 * The URL of `name` from its FACECOMPUTE_TEST_* variable, checked to accept a connection; otherwise
 * fails `t` with missingService's message and returns null (the caller then returns).
 */
export async function requireService(t: Test, name: ServiceName): Promise<string | null> {
  const url = process.env[ENV[name]];
  if (!url) {
    t.fail(missingService(name, `${ENV[name]} is not set`));
    return null;
  }
  const why = await unreachable(url);
  if (why) {
    t.fail(missingService(name, `${ENV[name]}=${url} does not answer (${why})`));
    return null;
  }
  return url;
}

/**
 * Binding a listener is all or nothing for the process: a surface that cannot listen (port taken,
 * no permission, an address this host does not have) must stop the whole command with a non-zero
 * exit, never leave a half-started service that answers readiness 200 without its console.
 * Every command binds through `listenSurface`, and `src/cli/main.ts` turns a `ListenError` into
 * `EXIT_LISTEN_FAILED` after the command has closed what it had started.
 */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** Exit status of a command whose listener could not bind (`serve` passes its child's on). */
export const EXIT_LISTEN_FAILED = 3;

const REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'the address is not available on this host',
  EINVAL: 'invalid address',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved',
};

export class ListenError extends Error {
  override name = 'ListenError';
  readonly surface: string;
  readonly address: string;
  /** The system error code (EADDRINUSE, EACCES, ...), or 'unknown'. */
  readonly code: string;

  constructor(surface: string, host: string, port: number, cause: unknown) {
    const code = typeof (cause as { code?: unknown })?.code === 'string' ? (cause as { code: string }).code : 'unknown';
    const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    super(`the ${surface} cannot listen on ${address}: ${REASONS[code] ?? (cause instanceof Error ? cause.message : String(cause))} (${code})`, { cause });
    this.surface = surface;
    this.address = address;
    this.code = code;
  }
}

export function isListenError(err: unknown): err is ListenError {
  return err instanceof ListenError;
}

/** Listens or throws a ListenError naming the surface; resolves with the bound port. */
export async function listenSurface(surface: string, app: FastifyInstance, host: string, port: number): Promise<number> {
  try {
    await app.listen({ host, port });
  } catch (err) {
    throw new ListenError(surface, host, port, err);
  }
  const a = app.server.address();
  return typeof a === 'object' && a ? a.port : port;
}

/** The same for a plain node:http server (the metrics admin listener). */
export async function listenHttp(surface: string, server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(new ListenError(surface, host, port, err));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const a = server.address();
  return typeof a === 'object' && a ? a.port : port;
}

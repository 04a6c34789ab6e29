/**
 * A lingering close for answers sent before the request's body was read (404/405 from the route
 * guard, 401, 413, 429 and 503 from the limits). Node closes such a connection as soon as the
 * answer is written; the body bytes still arriving then hit a closed socket, the kernel answers
 * them with a reset, and a client still sending can lose the answer it had not read yet (22 of 80
 * senders in the round-2 adversary run). Here the server instead sends its FIN after the answer and
 * keeps reading, discarding, until the client closes too, for at most LINGER_MS and LINGER_BYTES,
 * then closes: the same bound whatever the client declared, so a lingering socket costs a stranger's
 * share of time and bandwidth and no memory. A request whose body was read whole closes as before.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** How long a refused upload may go on being drained after the answer. */
export const LINGER_MS = 2000;
/** How many body bytes are drained at most; past them the socket is closed whatever comes. */
export const LINGER_BYTES = 16 * 1024 * 1024;

const LAST_REQUEST = Symbol('facecompute.lastRequest');
type TrackedSocket = Socket & { [LAST_REQUEST]?: IncomingMessage };

function linger(socket: Socket): void {
  // Counted on the socket: Node's HTTP parser may read the handle directly, with no 'data' events.
  const read0 = socket.bytesRead;
  const close = () => {
    clearTimeout(timer);
    clearInterval(watch);
    socket.destroy();
  };
  const timer = setTimeout(close, LINGER_MS).unref();
  const watch = setInterval(() => {
    if (socket.bytesRead - read0 > LINGER_BYTES) close();
  }, 50).unref();
  socket.once('close', () => {
    clearTimeout(timer);
    clearInterval(watch);
  });
  socket.once('end', close);
  socket.end();
  socket.resume();
}

/** Makes every connection of `app` that closes with a body unread linger as described above. */
export function registerLingeringClose(app: FastifyInstance): void {
  app.server.on('request', (req: IncomingMessage) => {
    const socket = req.socket as TrackedSocket;
    const patched = socket[LAST_REQUEST] !== undefined;
    socket[LAST_REQUEST] = req;
    if (patched) return;
    // Node's server calls destroySoon() once the last answer on a closing connection is written.
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      const last = socket[LAST_REQUEST];
      if (last === undefined || last.complete || socket.destroyed) return destroySoon();
      linger(socket);
    };
  });
}

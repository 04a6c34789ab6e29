/** HTTP/1.1 over a raw socket, for tests that send a head and only part of a body (or none of it). */
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  /** The response head, status line and headers. */
  headers: string;
  json: { error?: string };
}

/** Writes `head` and `body` (maybe less than the head declares) on a new socket; `answer` is the response, once whole. */
export function rawRequest(port: number, head: string, body: string | Buffer = ''): { socket: Socket; answer: Promise<RawAnswer> } {
  const socket = connect(port, '127.0.0.1');
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    let data = '';
    socket.on('data', (c) => {
      data += c.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end))?.[1] ?? NaN);
      if (data.length - end - 4 < len) return;
      resolve({ status: Number(data.slice(9, 12)), headers: data.slice(0, end), json: JSON.parse(data.slice(end + 4, end + 4 + len)) });
    });
    socket.on('error', reject);
  });
  socket.write(typeof body === 'string' ? head + body : Buffer.concat([Buffer.from(head, 'latin1'), body]));
  return { socket, answer };
}

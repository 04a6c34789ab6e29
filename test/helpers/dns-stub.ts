/**
 * A tiny authoritative DNS server over UDP on loopback, for discovery tests: A and AAAA records set
 * at run time, NXDOMAIN for unknown names, NODATA for a known name without records of the asked
 * type, and two faults: `servfail` (rcode 2) and `silent` (queries dropped, so the client times out).
 * Only what a resolver's query needs is parsed: one question, no EDNS answers.
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIP } from 'node:net';

export type DnsFault = 'none' | 'servfail' | 'silent';

export interface DnsStub {
  port: number;
  /** `ip:port`, for FACECOMPUTE_MODEL_SERVER_DNS_SERVERS or Resolver.setServers. */
  server: string;
  /** Sets a name's addresses (A and AAAA by family); undefined removes the name (NXDOMAIN). */
  set(name: string, addresses: string[] | undefined): void;
  fault(mode: DnsFault): void;
  queries: number;
  close(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  for (;;) {
    const len = msg[i];
    if (len === undefined) throw new Error('truncated name');
    if (len === 0) return { name: labels.join('.').toLowerCase(), end: i + 1 };
    if (len >= 0xc0) throw new Error('compressed question names are not expected');
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += 1 + len;
  }
}

function ipv6Bytes(addr: string): Buffer {
  const [head, tail] = addr.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const b = Buffer.alloc(16);
  groups.forEach((g, k) => b.writeUInt16BE(parseInt(g, 16), k * 2));
  return b;
}

export async function startDnsStub(): Promise<DnsStub> {
  const records = new Map<string, string[]>();
  let mode: DnsFault = 'none';
  const sock: Socket = createSocket('udp4');
  const stub: DnsStub = {
    port: 0,
    server: '',
    queries: 0,
    set(name, addresses) {
      if (addresses === undefined) records.delete(name.toLowerCase());
      else records.set(name.toLowerCase(), addresses);
    },
    fault(m) {
      mode = m;
    },
    close: () => new Promise((r) => sock.close(() => r())),
  };
  sock.on('message', (msg, rinfo) => {
    stub.queries++;
    if (mode === 'silent' || msg.length < 12) return;
    let q: { name: string; end: number };
    try {
      q = readName(msg, 12);
    } catch {
      return;
    }
    const qtype = msg.readUInt16BE(q.end);
    const question = msg.subarray(12, q.end + 4);
    const addrs = records.get(q.name);
    const rcode = mode === 'servfail' ? 2 : addrs === undefined ? 3 : 0;
    const family = qtype === 1 ? 4 : qtype === 28 ? 6 : 0;
    const answers = rcode === 0 && addrs ? addrs.filter((a) => isIP(a) === family) : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | rcode, 2); // QR, AA, RD copied
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const rrs = answers.map((a) => {
      const data = family === 4 ? Buffer.from(a.split('.').map(Number)) : ipv6Bytes(a);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the question's name
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(0, 6); // TTL 0: never cached
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    sock.send(Buffer.concat([header, question, ...rrs]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  stub.port = sock.address().port;
  stub.server = `127.0.0.1:${stub.port}`;
  return stub;
}

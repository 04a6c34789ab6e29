/**
 * The production mailer (issue 24, Medium 6): verification mails go out over SMTP with TLS, never in
 * clear. A small SMTP server on loopback (implicit TLS with a certificate made for this run, and a
 * plain one that offers no STARTTLS) stands in for the provider.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SmtpMailer } from '../src/accounts/mail/smtp-mailer.js';
import { loadConfig } from '../src/config/index.js';
import { createMailer } from '../src/accounts/mail/mailer.js';

const dir = mkdtempSync(join(tmpdir(), 'fc-smtp-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
const key = readFileSync(join(dir, 'key.pem'), 'utf8');

interface Session {
  auth: string | null;
  from: string | null;
  to: string[];
  data: string;
}

/** Just enough SMTP (RFC 5321) for one message: EHLO, AUTH PLAIN, MAIL, RCPT, DATA, QUIT. */
function converse(socket: Socket, sessions: Session[], extensions: string[]): void {
  const s: Session = { auth: null, from: null, to: [], data: '' };
  sessions.push(s);
  let buffer = '';
  let inData = false;
  socket.write('220 test ESMTP\r\n');
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (;;) {
      if (inData) {
        const end = buffer.indexOf('\r\n.\r\n');
        if (end < 0) return;
        s.data = buffer.slice(0, end);
        buffer = buffer.slice(end + 5);
        inData = false;
        socket.write('250 queued\r\n');
        continue;
      }
      const nl = buffer.indexOf('\r\n');
      if (nl < 0) return;
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 2);
      const verb = line.split(' ')[0]!.toUpperCase();
      if (verb === 'EHLO') socket.write(['250-test', ...extensions.map((e) => `250-${e}`), '250 8BITMIME'].join('\r\n') + '\r\n');
      else if (verb === 'AUTH') {
        s.auth = Buffer.from(line.split(' ')[2] ?? '', 'base64').toString('utf8');
        socket.write('235 ok\r\n');
      } else if (verb === 'MAIL') {
        s.from = line;
        socket.write('250 ok\r\n');
      } else if (verb === 'RCPT') {
        s.to.push(line);
        socket.write('250 ok\r\n');
      } else if (verb === 'DATA') {
        inData = true;
        socket.write('354 go on\r\n');
      } else if (verb === 'QUIT') socket.end('221 bye\r\n');
      else socket.write('502 no\r\n');
    }
  });
}

t.test('smtps://: the message goes over TLS, with the credentials of the URL', async (t) => {
  const sessions: Session[] = [];
  const server = createTlsServer({ cert, key }, (socket) => converse(socket, sessions, ['AUTH PLAIN']));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const mailer = new SmtpMailer(`smtps://mailer%40example.com:p%40ss@127.0.0.1:${port}`, 'facecompute <no-reply@example.com>', { ca: cert });
  t.teardown(() => mailer.close());
  await mailer.send({ to: 'person@example.com', subject: 'Verify your email for facecompute', text: 'https://console.example/verify-email?token=abc' });
  t.equal(sessions.length, 1);
  t.equal(sessions[0]!.auth, '\0mailer@example.com\0p@ss', 'AUTH PLAIN with the URL\'s (decoded) user and password');
  t.match(sessions[0]!.from, /<no-reply@example\.com>/);
  t.match(sessions[0]!.to, [/<person@example\.com>/]);
  t.match(sessions[0]!.data, /Subject: Verify your email for facecompute/);
  t.match(sessions[0]!.data, /verify-email\?token=abc/);
});

t.test('smtp:// without STARTTLS: nothing is sent in clear', async (t) => {
  const sessions: Session[] = [];
  const server = createNetServer((socket) => converse(socket, sessions, ['AUTH PLAIN']));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const mailer = new SmtpMailer(`smtp://mailer:secret@127.0.0.1:${port}`, 'facecompute <no-reply@example.com>');
  t.teardown(() => mailer.close());
  await t.rejects(mailer.send({ to: 'person@example.com', subject: 's', text: 'x' }), 'refused: the server offers no STARTTLS');
  t.same(sessions.map((s) => [s.auth, s.data]), [[null, '']], 'neither the password nor the message crossed');
});

t.test('FACECOMPUTE_MAILER picks the mailer', async (t) => {
  t.equal(createMailer(loadConfig({ FACECOMPUTE_DATA_DIR: dir })).kind, 'file', 'file by default');
  t.equal(createMailer(loadConfig({ FACECOMPUTE_MAILER: 'smtp', FACECOMPUTE_SMTP_URL: 'smtps://u:p@127.0.0.1:465' })).kind, 'smtp');
});

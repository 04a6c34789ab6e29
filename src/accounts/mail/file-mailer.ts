/** Development and tests: each message becomes an RFC 5322 file in <dataDir>/outbox, newest last by name. */
import { mkdir, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Mailer, MailMessage } from './message.js';

export function outboxDir(dataDir: string): string {
  return join(dataDir, 'outbox');
}

export class FileMailer implements Mailer {
  readonly kind = 'file';
  constructor(
    private readonly dataDir: string,
    private readonly from: string,
  ) {}

  async send(m: MailMessage): Promise<void> {
    const dir = outboxDir(this.dataDir);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const oneLine = (s: string) => s.replace(/[\r\n]+/g, ' ');
    const text = [`From: ${oneLine(this.from)}`, `To: ${oneLine(m.to)}`, `Subject: ${oneLine(m.subject)}`, `Date: ${new Date().toUTCString()}`, 'Content-Type: text/plain; charset=utf-8', '', m.text, ''].join('\r\n');
    await writeFile(join(dir, `${Date.now()}-${randomUUID()}.eml`), text, { mode: 0o600 });
  }
}

/**
 * Production: SMTP through nodemailer (a well-kept client: TLS, STARTTLS, auth, pooling). smtps://
 * connects with TLS; smtp:// must upgrade with STARTTLS (requireTLS), so credentials and links never
 * cross the network in clear. The URL carries the credentials and is never logged.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import type { Mailer, MailMessage } from './message.js';

export class SmtpMailer implements Mailer {
  readonly kind = 'smtp';
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
    /** Tests only: the certificate authority of a local server (verification stays on). */
    tls: { ca?: string } = {},
  ) {
    const url = new URL(smtpUrl);
    const secure = url.protocol === 'smtps:';
    this.transport = nodemailer.createTransport({
      host: url.hostname,
      port: Number(url.port || (secure ? 465 : 587)),
      secure,
      requireTLS: !secure,
      ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
      tls: { minVersion: 'TLSv1.2', ...tls },
    });
  }

  async send(m: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: m.to, subject: m.subject, text: m.text });
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

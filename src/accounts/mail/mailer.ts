/**
 * Outgoing mail (email verification) behind one interface, chosen by FACECOMPUTE_MAILER: the file
 * mailer for development and tests (each message an .eml file in DATA_DIR/outbox; nothing leaves the
 * machine) and the SMTP sender for production (nodemailer, FACECOMPUTE_SMTP_URL).
 */
import type { Config } from '../../config/index.js';
import { FileMailer } from './file-mailer.js';
import { SmtpMailer } from './smtp-mailer.js';

import type { Mailer } from './message.js';

export type { Mailer, MailMessage } from './message.js';

export function createMailer(config: Config): Mailer {
  const m = config.accounts.mail;
  return m.mailer === 'smtp' ? new SmtpMailer(m.smtpUrl, m.from) : new FileMailer(config.dataDir, m.from);
}

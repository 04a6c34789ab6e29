/** What a mailer is and sends (apart from mailer.ts, which picks one, so the two mailers need not import it). */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  readonly kind: 'file' | 'smtp';
  /** Sends (or writes) one message; throws when it could not be handed over. */
  send(message: MailMessage): Promise<void>;
  close?(): Promise<void>;
}

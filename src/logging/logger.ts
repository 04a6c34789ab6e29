import pino, { type Logger } from 'pino';

/**
 * Structured JSON logs. Secrets never reach them: the redaction list covers every header and field
 * that can carry a key, a session token, a password or a card token.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'req.headers["x-facecompute-internal-token"]',
  'res.headers["set-cookie"]',
  'password',
  'key',
  'session_token',
  'payment_method',
  '*.password',
  '*.key',
  '*.session_token',
  '*.payment_method',
];

export function createLogger(name: string, level: string): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } });
}

export type { Logger };

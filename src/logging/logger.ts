import pino, { type DestinationStream, type Logger } from 'pino';

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
  // The request line's query string: the console's /verify-email?token=… carries a signed token.
  'req.url',
];

/** Query parameters whose values are secrets (a link's token, a key, a password). */
const SECRET_QUERY = /([?&](?:token|key|api_key|session_token|password|secret|code)=)[^&#]*/gi;

/** `url` with the values of its secret query parameters replaced: `/verify-email?token=[redacted]`. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[redacted]');
}

function censor(value: unknown, path: string[]): unknown {
  return path[path.length - 1] === 'url' && typeof value === 'string' ? redactUrl(value) : '[redacted]';
}

export function createLogger(name: string, level: string, destination?: DestinationStream): Logger {
  const options = { name, level, redact: { paths: REDACT_PATHS, censor } };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };

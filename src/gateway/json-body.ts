/**
 * JSON bodies, with one addition to Fastify's own parser (secure-json-parse, which refuses
 * `__proto__` and `constructor` keys): Python's json module, and so the vectors of many DeepFace
 * users, writes NaN and ±Infinity as the bare tokens `NaN`, `Infinity` and `-Infinity`, which are not
 * JSON. A body that fails to parse only because of such tokens holds non-finite embedding values, and
 * is refused as `400 invalid_embedding` saying so, instead of a bare "not valid JSON".
 */
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../errors/index.js';

const TOKENS = ['NaN', 'Infinity', '-Infinity'] as const;

/**
 * True when `text` is not JSON only because of bare NaN/Infinity tokens (outside strings): with each
 * token read as 0 it parses.
 */
export function hasBareNonFinite(text: string): boolean {
  let out = '';
  let found = false;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') {
        out += ch + (text[i + 1] ?? '');
        i++;
        continue;
      }
      if (ch === '"') inString = false;
      out += ch;
      continue;
    }
    if (ch === '"') {
      inString = true;
      out += ch;
      continue;
    }
    const token = TOKENS.find((tk) => text.startsWith(tk, i) && !/[A-Za-z0-9_$]/.test(text[i + tk.length] ?? ''));
    if (token && !/[A-Za-z0-9_$.]/.test(text[i - 1] ?? '')) {
      out += '0';
      i += token.length - 1;
      found = true;
      continue;
    }
    out += ch;
  }
  if (!found) return false;
  try {
    JSON.parse(out);
    return true;
  } catch {
    return false;
  }
}

export const NON_FINITE_DETAIL = 'the body holds NaN or Infinity, which JSON cannot carry: every embedding value must be a finite number';

/** Replaces the application/json parser of `app` with Fastify's own plus the NaN/Infinity diagnosis. */
export function useJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    parse(req, text, (err, value) => {
      if (err && hasBareNonFinite(text)) {
        done(new ServiceError('invalid_embedding', NON_FINITE_DETAIL, { cause: err }), undefined);
        return;
      }
      done(err, value);
    });
  });
}

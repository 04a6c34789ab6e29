/** Checks on what users type, shared by the JSON API and the web forms. */
import { ServiceError } from '../errors/index.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(value: unknown): string {
  if (typeof value !== 'string') throw new ServiceError('invalid_request', 'email is required');
  const email = value.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) throw new ServiceError('invalid_request', 'email is not a valid email address');
  return email;
}

export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 256;

export function checkPassword(value: unknown): string {
  if (typeof value !== 'string') throw new ServiceError('invalid_request', 'password is required');
  if (value.length < PASSWORD_MIN) throw new ServiceError('invalid_request', `password must be at least ${PASSWORD_MIN} characters`);
  if (value.length > PASSWORD_MAX) throw new ServiceError('invalid_request', `password must be at most ${PASSWORD_MAX} characters`);
  return value;
}

export function checkKeyName(value: unknown): string {
  if (typeof value !== 'string') throw new ServiceError('invalid_request', 'name is required');
  const name = value.trim();
  if (name.length === 0) throw new ServiceError('invalid_request', 'name must not be empty');
  if (name.length > 100) throw new ServiceError('invalid_request', 'name must be at most 100 characters');
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new ServiceError('invalid_request', 'name must not contain control characters');
  return name;
}

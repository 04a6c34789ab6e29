/** Password hashing with argon2id (OWASP's recommended parameters are the library defaults). */
import { hash, verify, Algorithm } from '@node-rs/argon2';

export async function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: Algorithm.Argon2id });
}

// Verifying against this when the email is unknown keeps login timing the same for both cases, so
// response times do not reveal which emails have accounts.
let dummyHash: Promise<string> | undefined;

export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    dummyHash ??= hashPassword('facecompute-dummy-password');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}

/**
 * multipart/form-data bodies: file parts carry images, text parts the other fields. The parts are
 * turned into the same object a JSON body would be, then validated by the same schema. File bytes are
 * kept beside the body; the body holds a placeholder (UPLOAD_MARK…) that only this request can resolve.
 */
import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import { ServiceError } from '../errors/index.js';
import { MULTIPART_FIELD_KIND } from './schemas.js';
import { UPLOAD_MARK } from './inputs/resolve.js';

export async function parseMultipart(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number): Promise<{ body: Record<string, unknown>; uploads: Map<string, Buffer> }> {
  const body: Record<string, unknown> = {};
  const uploads = new Map<string, Buffer>();
  let total = 0;
  const add = (name: string, value: unknown, repeatable: boolean) => {
    if (name === 'source' && typeof value === 'string' && value.startsWith(UPLOAD_MARK)) value = { img: value };
    if (Object.prototype.hasOwnProperty.call(body, name)) {
      if (!repeatable) throw new ServiceError('invalid_request', `field '${name}' is given more than once`);
      const prev = body[name];
      body[name] = Array.isArray(prev) ? [...prev, value] : [prev, value];
    } else body[name] = value;
  };
  for await (const part of req.parts({ limits: { fileSize: maxImageBytes, files: 64, fields: 64, parts: 128, fieldSize: maxRequestBytes } })) {
    const name = part.fieldname;
    if (name === '__proto__' || name === 'constructor' || name === 'prototype') throw new ServiceError('invalid_request', `field '${name}' is not allowed`);
    if (part.type === 'file') {
      const buf = await part.toBuffer();
      total += buf.length;
      if (total > maxRequestBytes) throw new ServiceError('request_too_large', 'the request body is larger than the limit');
      const kind = MULTIPART_FIELD_KIND[name];
      if (kind !== 'image' && name !== 'source') throw new ServiceError('invalid_request', `file part '${name}' is not an image field (img, img1, img2 or source)`);
      const mark = `${UPLOAD_MARK}${uploads.size}`;
      uploads.set(mark, buf);
      add(name, mark, name === 'img');
      continue;
    }
    const raw = String(part.value ?? '');
    total += raw.length;
    if (total > maxRequestBytes) throw new ServiceError('request_too_large', 'the request body is larger than the limit');
    const kind = MULTIPART_FIELD_KIND[name];
    let value: unknown = raw;
    if (kind === 'number') {
      value = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(raw.trim()) ? Number(raw) : raw;
    } else if (kind === 'bool') {
      if (!['true', 'false', '1', '0'].includes(raw)) throw new ServiceError('invalid_request', `field '${name}' must be true, false, 1 or 0 in a multipart body`);
    } else if (kind === 'json') {
      try {
        value = JSON.parse(raw);
      } catch {
        throw new ServiceError('invalid_request', `field '${name}' must be JSON in a multipart text part`);
      }
    } else if (kind === 'image' && /^\s*\[/.test(raw)) {
      // an embedding sent as a text part
      try {
        value = JSON.parse(raw);
      } catch {
        throw new ServiceError('invalid_request', `field '${name}' is not valid JSON`);
      }
    }
    add(name, value, name === 'img');
  }
  return { body, uploads };
}

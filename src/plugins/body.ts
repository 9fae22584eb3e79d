import type { FastifyInstance, FastifyRequest } from 'fastify';
import Busboy from 'busboy';
import { Readable } from 'node:stream';
import { JsonableError, badRequest } from '../errors.js';

/** An uploaded file from a multipart body. */
export interface UploadedFile {
  field: string;
  filename: string;
  mimeType: string;
  data: Buffer;
}

/**
 * Parses every body encoding real clients send into flat string values, last value winning
 * for a repeated name (as Django's QueryDict does): form-urlencoded (python, flutter, mobile),
 * multipart (zulip-js, uploads), and JSON objects for convenience (non-string values are
 * re-encoded as JSON, so they decode like form values).
 */
export function parseUrlEncoded(body: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of new URLSearchParams(body)) out[k] = v;
  return out;
}

const bodyTooLarge = (): JsonableError => new JsonableError('Request body too large', 'BAD_REQUEST', 413);

function parseMultipart(req: FastifyRequest, payload: Readable, limit: number): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    let bb: Busboy.Busboy;
    try {
      bb = Busboy({ headers: req.headers, limits: { fileSize: limit, fieldSize: limit } });
    } catch {
      reject(badRequest('Malformed multipart body'));
      return;
    }
    // Fastify's bodyLimit applies only to the parsers that buffer the body; count this one.
    let received = 0;
    payload.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        payload.unpipe(bb);
        payload.resume();
        reject(bodyTooLarge());
      }
    });
    const fields: Record<string, string> = Object.create(null);
    const files: UploadedFile[] = [];
    bb.on('field', (name, value, info) => {
      // Busboy truncates an over-long field silently; a truncated value must not be used.
      if (info.valueTruncated) reject(bodyTooLarge());
      fields[name] = value ?? "";
    });
    bb.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => reject(new JsonableError('Uploaded file is larger than the allowed limit', 'BAD_REQUEST', 413)));
      stream.on('end', () => files.push({ field, filename: info.filename ?? '', mimeType: info.mimeType, data: Buffer.concat(chunks) }));
    });
    bb.on('close', () => {
      (req as FastifyRequest & { files?: UploadedFile[] }).files = files;
      resolve(fields);
    });
    bb.on('error', () => reject(badRequest('Malformed multipart body')));
    payload.pipe(bb);
  });
}

function fromJsonObject(text: string): Record<string, string> {
  if (text.trim() === '') return Object.create(null);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('Malformed JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('Malformed JSON');
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of Object.entries(value)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

export function registerBodyParsers(app: FastifyInstance, limit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: limit }, (_req, body, done) => {
    done(null, parseUrlEncoded(body as string));
  });
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: limit }, (_req, body, done) => {
    try {
      done(null, fromJsonObject(body as string));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
  app.addContentTypeParser('multipart/form-data', (req, payload, done) => {
    parseMultipart(req, payload as unknown as Readable, limit).then(
      (fields) => done(null, fields),
      (e: Error) => done(e, undefined),
    );
  });
  // Anything else (text/plain, a missing type from a hand-written client): read it as a form.
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: limit }, (_req, body, done) => {
    done(null, parseUrlEncoded(body as string));
  });
}

export function filesOf(req: FastifyRequest): UploadedFile[] {
  return (req as FastifyRequest & { files?: UploadedFile[] }).files ?? [];
}

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The body was over the limit (HTTP 413). */
export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`request body is over maxBodyBytes ${limitBytes}; send less data (keep large inputs in shared storage and pass their keys) or start the gateway with a larger --max-body-bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/**
 * Reads a request body up to `limitBytes`, refusing early on a larger `Content-Length`.
 * @throws BodyTooLargeError past the limit (the rest is not read; the caller answers 413 and closes).
 */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) return Promise.reject(new BodyTooLargeError(limitBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limitBytes) {
        req.off('data', onData);
        req.resume();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** Writes a JSON response (unless the client is gone). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(json)), ...headers });
  res.end(json);
}

/** `{ error: { type, message } }` with `status`. */
export function sendError(res: ServerResponse, status: number, type: string, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error: { type, message }, ...extra }, headers);
}

/**
 * True when the request carries `Authorization: Bearer <token>`. Compared as SHA-256 digests
 * with `timingSafeEqual`, so neither the token's length nor its prefix leaks through timing.
 */
export function hasBearer(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization;
  if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false;
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(header.slice('Bearer '.length).trim()), digest(token));
}

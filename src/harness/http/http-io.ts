import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The body was over the limit (HTTP 413). `drained`: the whole body was read (and discarded), so the answer reaches any client. */
export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number, readonly drained: boolean) {
    super(`request body is over maxBodyBytes ${limitBytes}; send less data (keep large inputs in shared storage and pass their keys) or start the gateway with a larger --max-body-bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** Most bytes of an over-limit body read and discarded before the 413, for `limitBytes`: 4 × the limit, at least 64 MiB. */
export const drainLimitBytes = (limitBytes: number): number => Math.max(4 * limitBytes, 64 * 1024 * 1024);

/**
 * Reads a request body up to `limitBytes`. A larger body (by `Content-Length` or as it arrives)
 * is read to its end and discarded, up to {@link drainLimitBytes}, before the caller answers 413:
 * a server that answers while the client still sends and closes makes the client's write fail
 * (Node's fetch saw EPIPE, not the status, in 10 of 12 tries) and a client then retries the
 * upload. Past the drain limit the rest is not read (the caller answers and closes).
 * @throws BodyTooLargeError past `limitBytes`, once drained (or the drain limit is passed).
 */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const drainBytes = drainLimitBytes(limitBytes);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > drainBytes) return Promise.reject(new BodyTooLargeError(limitBytes, false));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > limitBytes;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > drainBytes) {
        req.off('data', onData);
        reject(new BodyTooLargeError(limitBytes, false));
        return;
      }
      if (size > limitBytes) over = true;
      if (!over) chunks.push(chunk);
      else chunks.length = 0;
    };
    req.on('data', onData);
    req.once('end', () => (over ? reject(new BodyTooLargeError(limitBytes, true)) : resolve(Buffer.concat(chunks))));
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

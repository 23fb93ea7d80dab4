import { brandedKind } from '../spec/errors.js';
import type { ErrorInfo, ResultKind } from '../spec/index.js';

/** errno codes that mean the machine, not the rollout, failed (Node's `err.code`). */
const OS_FAILURE_CODES: ReadonlySet<string> = new Set(['ENOMEM', 'EAGAIN', 'EMFILE', 'ENFILE', 'ENOSPC', 'EDQUOT']);

/**
 * `code`s of a dependency failing for a moment: connection refused/reset/aborted, timed out,
 * host or network unreachable, DNS failure (Node's errno codes, and undici's — the engine of
 * Node's `fetch` — for connect, header and socket failures).
 */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN',
  'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET',
]);

/** HTTP statuses that say "try again" (RFC 9110: 408 Request Timeout, 429 Too Many Requests, 5xx). */
function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** Longest error message carried in a Result, characters. */
export const MAX_ERROR_MESSAGE = 4000;

/** How deep `cause` chains (and AggregateError `errors`) are followed. */
const MAX_CAUSE_DEPTH = 8;

/** A classified failure: the Result kind plus the error as data. */
export interface Classified {
  readonly kind: Exclude<ResultKind, 'ok'>;
  readonly error: ErrorInfo;
}

function truncate(message: string): string {
  return message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE)}… [truncated]` : message;
}

type ErrorRecord = { name?: unknown; message?: unknown; type?: unknown; code?: unknown; syscall?: unknown; status?: unknown; statusCode?: unknown; response?: unknown; cause?: unknown; errors?: unknown };

/** `err`, its `cause`, the cause's cause… (an AggregateError's first error stands in for a missing cause). */
function causeChain(err: unknown): ErrorRecord[] {
  const chain: ErrorRecord[] = [];
  let current: unknown = err;
  while (current !== null && typeof current === 'object' && chain.length < MAX_CAUSE_DEPTH && !chain.includes(current as ErrorRecord)) {
    const record = current as ErrorRecord;
    chain.push(record);
    current = record.cause ?? (Array.isArray(record.errors) ? (record.errors[0] as unknown) : undefined);
  }
  return chain;
}

function httpStatus(record: ErrorRecord): number | undefined {
  const response = record.response as { status?: unknown } | null | undefined;
  for (const value of [record.status, record.statusCode, response && typeof response === 'object' ? response.status : undefined]) {
    if (typeof value === 'number' && Number.isInteger(value)) return value;
  }
  return undefined;
}

/** The message of each link of the chain, joined by ": ", each said once ("fetch failed: connect ECONNREFUSED 127.0.0.1:1"). */
function chainMessage(chain: readonly ErrorRecord[], fallback: string): string {
  const parts: string[] = [];
  for (const record of chain) {
    const text = typeof record.message === 'string' ? record.message.trim() : '';
    if (text && !parts.some((part) => part.includes(text))) parts.push(text);
  }
  return parts.length > 0 ? parts.join(': ') : fallback;
}

/**
 * Classifies what rollout code threw, by what happened rather than by exact class name
 * (ACCEPTANCE 23), looking through `cause` chains (and AggregateError's `errors`), first
 * decisive link wins:
 * - an error branded with a kind (CallerError, RefError, InfrastructureError, ModelError and
 *   their subclasses) keeps it;
 * - an OS-level failure (`code` ENOMEM, EAGAIN, EMFILE, ENFILE, ENOSPC, EDQUOT, or a failed
 *   `spawn`) is `infrastructure`;
 * - a transient failure of a dependency is `infrastructure`: `code` ECONNREFUSED, ECONNRESET,
 *   ETIMEDOUT, ENOTFOUND, EAI_AGAIN and the like (what `fetch` reports in its `cause`), or an
 *   HTTP status 408, 429 or 5xx in `status`, `statusCode` or `response.status` (the fields
 *   HTTP client errors carry);
 * - anything else, including non-Error values, is `model`.
 * The message joins the chain's messages, so "fetch failed" carries its reason.
 */
export function classifyError(err: unknown): Classified {
  if (!(err instanceof Error) && (err === null || typeof err !== 'object')) {
    return { kind: 'model', error: { type: 'NonErrorThrown', message: truncate(`rollout code threw a non-Error value: ${String(err)}`) } };
  }
  const chain = causeChain(err);
  const top = chain[0] as ErrorRecord;
  const name = typeof top.name === 'string' && top.name ? top.name : 'Error';
  const type = typeof top.type === 'string' && top.type ? top.type : name;
  const message = truncate(chainMessage(chain, String(err)));
  for (const record of chain) {
    const branded = brandedKind(record);
    if (branded && branded !== 'ok') return { kind: branded, error: { type, message } };
    const code = typeof record.code === 'string' ? record.code : undefined;
    const syscall = typeof record.syscall === 'string' ? record.syscall : '';
    if ((code && OS_FAILURE_CODES.has(code)) || syscall.startsWith('spawn')) {
      return { kind: 'infrastructure', error: { type: code ?? type, message } };
    }
    if (code && TRANSIENT_CODES.has(code)) return { kind: 'infrastructure', error: { type: code, message } };
    const status = httpStatus(record);
    if (status !== undefined && isTransientStatus(status)) return { kind: 'infrastructure', error: { type: `HTTP${status}`, message } };
  }
  return { kind: 'model', error: { type, message } };
}

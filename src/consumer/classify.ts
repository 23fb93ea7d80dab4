import { brandedKind, type ErrorInfo, type ResultKind } from '../spec/index.js';

/** errno codes that mean the machine, not the rollout, failed (Node's `err.code`). */
const OS_FAILURE_CODES: ReadonlySet<string> = new Set(['ENOMEM', 'EAGAIN', 'EMFILE', 'ENFILE', 'ENOSPC', 'EDQUOT']);

/** Longest error message carried in a Result, characters. */
export const MAX_ERROR_MESSAGE = 4000;

/** A classified failure: the Result kind plus the error as data. */
export interface Classified {
  readonly kind: Exclude<ResultKind, 'ok'>;
  readonly error: ErrorInfo;
}

function truncate(message: string): string {
  return message.length > MAX_ERROR_MESSAGE ? `${message.slice(0, MAX_ERROR_MESSAGE)}… [truncated]` : message;
}

/**
 * Classifies what rollout code threw, by what happened rather than by exact class name
 * (ACCEPTANCE 23): an error branded with a kind (CallerError, RefError,
 * InfrastructureError, ModelError and their subclasses) keeps it; an OS-level failure
 * (`code` ENOMEM, EAGAIN, EMFILE, ENFILE, ENOSPC, EDQUOT, or a failed `spawn`) is
 * `infrastructure`; anything else, including non-Error values, is `model`.
 */
export function classifyError(err: unknown): Classified {
  if (!(err instanceof Error) && (err === null || typeof err !== 'object')) {
    return { kind: 'model', error: { type: 'NonErrorThrown', message: truncate(`rollout code threw a non-Error value: ${String(err)}`) } };
  }
  const record = err as { name?: unknown; message?: unknown; type?: unknown; code?: unknown; syscall?: unknown };
  const name = typeof record.name === 'string' && record.name ? record.name : 'Error';
  const type = typeof record.type === 'string' && record.type ? record.type : name;
  const message = truncate(typeof record.message === 'string' ? record.message : String(err));
  const branded = brandedKind(err);
  if (branded && branded !== 'ok') return { kind: branded, error: { type, message } };
  const code = typeof record.code === 'string' ? record.code : undefined;
  const syscall = typeof record.syscall === 'string' ? record.syscall : '';
  if ((code && OS_FAILURE_CODES.has(code)) || syscall.startsWith('spawn')) {
    return { kind: 'infrastructure', error: { type: code ?? type, message } };
  }
  return { kind: 'model', error: { type, message } };
}

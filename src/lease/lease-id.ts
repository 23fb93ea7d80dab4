import { createHash } from 'node:crypto';
import { isRunId, MAX_ID_LENGTH, RunIdSchema, SAFE_ID } from '../spec/index.js';

/** The suffix `-<16 hex>` that marks a key as sanitized; a raw key ending like this is hashed too. */
const DIGEST_SUFFIX = /-[0-9a-f]{16}$/;

/**
 * Turns a task key (task.id, or a line number) into the safe part of a lease id.
 * A key of at most MAX_ID_LENGTH safe characters (`[A-Za-z0-9._-]`) is kept as is. Any other
 * key becomes its cleaned prefix (unsafe characters as `_`) plus `-` and a 64-bit hash of the
 * original, so distinct keys stay distinct: the hash tells apart keys that clean to the same
 * text (all-CJK ids of one length), and a raw key that already ends like a hash is hashed
 * as well, so no key can pose as the sanitized form of another.
 */
export function safeTaskKey(taskKey: string | number): string {
  const raw = String(taskKey);
  // Callers add the fix in their own terms (a draft's taskKey or task.id, a tasks file's line).
  if (raw.length === 0) throw new Error('task key is empty');
  if (raw.length <= MAX_ID_LENGTH && SAFE_ID.test(raw) && !DIGEST_SUFFIX.test(raw)) return raw;
  const cut = raw.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, MAX_ID_LENGTH - 17);
  return `${cut}-${digest(raw)}`;
}

/** 16 hex digits of SHA-256 over the key's UTF-16 code units (UTF-8 would merge lone surrogates into U+FFFD). */
function digest(text: string): string {
  return createHash('sha256').update(Buffer.from(text, 'utf16le')).digest('hex').slice(0, 16);
}

/**
 * The lease id of one task in one run: `<runId>.<taskKey>`, also its BullMQ job id. It is
 * deterministic, so re-submitting after a coordinator restart adds nothing (BullMQ ignores
 * an `add` whose job id exists; see its docs "Job Ids").
 * @throws Error naming runId when it is not a valid run id.
 */
export function leaseIdFor(runId: string, taskKey: string | number): string {
  // Checked for every draft (and each rollout() call is a run of its own): zod only for the
  // message of a bad one.
  if (!isRunId(runId)) {
    const parsed = RunIdSchema.safeParse(runId);
    if (!parsed.success) {
      throw new Error(`runId "${runId}": ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    }
  }
  return `${runId}.${safeTaskKey(taskKey)}`;
}

import { MAX_ID_LENGTH, RunIdSchema } from '../spec/index.js';

/**
 * Turns a task key (task.id, or a line number) into the safe part of a lease id.
 * Characters outside `[A-Za-z0-9._-]` become `_`, and a short hash of the original is
 * appended when anything was replaced or cut, so distinct keys stay distinct.
 */
export function safeTaskKey(taskKey: string | number): string {
  const raw = String(taskKey);
  if (raw.length === 0) throw new Error('task key is empty; give the task an "id" or use its line number');
  const cleaned = raw.replace(/[^A-Za-z0-9._-]/g, '_');
  const cut = cleaned.slice(0, MAX_ID_LENGTH - 9);
  if (cut === raw) return raw;
  return `${cut}-${fnv1a(raw)}`;
}

function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const char of Buffer.from(text, 'utf8')) {
    hash ^= char;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/**
 * The lease id of one task in one run: `<runId>.<taskKey>`, also its BullMQ job id. It is
 * deterministic, so re-submitting after a coordinator restart adds nothing (BullMQ ignores
 * an `add` whose job id exists; see its docs "Job Ids").
 * @throws Error naming runId when it is not a valid run id.
 */
export function leaseIdFor(runId: string, taskKey: string | number): string {
  const parsed = RunIdSchema.safeParse(runId);
  if (!parsed.success) {
    throw new Error(`runId "${runId}": ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  }
  return `${runId}.${safeTaskKey(taskKey)}`;
}

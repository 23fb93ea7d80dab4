/**
 * Redis error replies that mean "this server refuses writes now", not "unreachable": `OOM`
 * (used_memory past `maxmemory`, under `noeviction` or with nothing left to evict),
 * `EXECABORT` (a MULTI discarded because one of its commands was refused), `READONLY` (a
 * replica), `MISCONF` (RDB snapshots failing), `NOREPLICAS`. BullMQ's worker retries these at
 * once (its `runRetryDelay` covers only connection errors: `retryIfFailed` in
 * bullmq `src/classes/worker.ts`), which is the hot loop of issue 11.
 */
const REFUSAL = /^(?:ReplyError: )?(OOM|EXECABORT|READONLY|MISCONF|NOREPLICAS)\b/;

/** The refusal code of a Redis error (`OOM`, `EXECABORT`, …), or undefined for any other error. */
export function writeRefusalCode(err: unknown): string | undefined {
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : '';
  return REFUSAL.exec(message)?.[1];
}

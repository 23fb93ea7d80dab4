import type { Redis } from 'ioredis';
import { readRunRecord, type QueueKeys } from '../../lease/index.js';
import type { Logger } from '../../platform/logger.js';

/** Fewest ms a dispatch run must go without a call before it counts as abandoned (a client retrying against another gateway needs a moment). */
export const MIN_ABANDONED_MS = 5000;
/** Run ids a sweep reads per SSCAN page. */
const SCAN_COUNT = 200;

/** What the sweeper needs of its queueDispatch. */
export interface SweeperDeps {
  readonly redis: Redis;
  readonly keys: QueueKeys;
  /** How long a dispatch run goes without a call (no coordinator holds it) before it is finished, ms. */
  readonly abandonedMs: number;
  /** True while a call of this process waits on the run (never adopted then). */
  readonly attachedHere: (runId: string) => boolean;
  /** Finishes one abandoned run: collects its Result and keeps it as the cell's answer. */
  readonly adopt: (runId: string) => Promise<void>;
  readonly logger: Logger | undefined;
}

/**
 * Finds dispatch runs nobody waits on any more (a gateway stopped mid-dispatch and its client
 * never retried; a coordinator process died) and has them finished, so their Result (and its cost
 * receipts) ends up kept as the cell's answer for a late retry, the run record completes with
 * the producer's retention, and `status` of the run counts its cost, instead of the run staying
 * `running` in Redis forever. A run counts as abandoned once every sweep for `abandonedMs`
 * (at least {@link MIN_ABANDONED_MS}) found it running with no coordinator lease held (a call
 * that waits holds it) and no kept answer. Each sweep is one SSCAN of the queue's runs set for
 * `dispatch-*` ids, a pipeline of EXISTS per candidate, and a run record read per abandoned one.
 */
export class AbandonedDispatchSweeper {
  private readonly unheldSince = new Map<string, number>();
  private readonly adopting = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly deps: SweeperDeps) {}

  /** Sweeps every `everyMs` (the first sweep after one interval), unref'd. */
  start(everyMs: number): void {
    this.timer ??= setInterval(() => {
      this.sweeping ??= this.sweep().catch((err: Error) => this.deps.logger?.debug({ err: err.message }, 'sweeping abandoned dispatch runs failed; the next sweep retries')).finally(() => (this.sweeping = undefined));
    }, everyMs);
    this.timer.unref();
  }

  /**
   * Stops sweeping; an adoption under way is not waited for: closing the producer ends its
   * session, and the run is left for another process' sweeper.
   */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One sweep. */
  async sweep(): Promise<void> {
    const { redis, keys } = this.deps;
    const now = Date.now();
    const candidates: string[] = [];
    let cursor = '0';
    do {
      const [next, ids] = await redis.sscan(keys.runs(), cursor, 'MATCH', 'dispatch-*', 'COUNT', SCAN_COUNT);
      cursor = next;
      candidates.push(...ids.filter((id) => !this.deps.attachedHere(id) && !this.adopting.has(id)));
    } while (cursor !== '0');
    const seen = new Set(candidates);
    for (const runId of [...this.unheldSince.keys()]) if (!seen.has(runId)) this.unheldSince.delete(runId);
    if (candidates.length === 0) return;
    const pipe = redis.pipeline();
    for (const runId of candidates) pipe.exists(keys.runCoordinator(runId), keys.dispatchAnswer(runId));
    const replies = (await pipe.exec()) ?? [];
    const due: string[] = [];
    for (const [i, runId] of candidates.entries()) {
      const [err, held] = replies[i] ?? [];
      if (err || held !== 0) {
        this.unheldSince.delete(runId);
        continue;
      }
      const since = this.unheldSince.get(runId) ?? now;
      this.unheldSince.set(runId, since);
      if (now - since >= Math.max(this.deps.abandonedMs, MIN_ABANDONED_MS)) due.push(runId);
    }
    for (const runId of due) {
      if (this.stopped) return;
      if ((await readRunRecord(redis, keys, runId))?.status !== 'running') continue;
      this.unheldSince.delete(runId);
      this.adopting.add(runId);
      this.deps.logger?.info({ runId }, 'finishing an abandoned dispatch run (no call waited on it): its answer is kept for a late retry');
      await this.deps.adopt(runId).catch((err: Error) => {
        if (!this.stopped) this.deps.logger?.warn({ runId, err: err.message }, 'finishing an abandoned dispatch run failed; a later sweep retries');
      });
      this.adopting.delete(runId);
    }
  }
}

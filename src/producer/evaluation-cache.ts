import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { canonicalRefJson } from '../ref/index.js';
import { parseResult, type Ref, type Result, type RolloutSpec } from '../spec/index.js';
import { withMeta } from './result-meta.js';

/**
 * The content hash of an evaluation: SHA-256 (hex) of the canonical JSON (object keys sorted at
 * every level, Ref defaults filled) of `[rendered, task, run, reward]`, plus the spec's
 * `goldKeys` and `goldVisibleToRun` when set (they change what the run sees, so an answer given
 * with the gold visible never stands for one without). Two specs with equal hashes evaluate the
 * same artifact on the same task the same way.
 */
export function evaluationHash(spec: Pick<RolloutSpec, 'rendered' | 'task' | 'run' | 'reward'> & Partial<Pick<RolloutSpec, 'goldKeys' | 'goldVisibleToRun'>>): string {
  const parts: unknown[] = [spec.rendered, spec.task, spec.run, spec.reward];
  // As they act (a set of keys, an opt-in), and only when they change anything: the hash of every
  // spec without them (and so its cached answer) stays as it was.
  const goldKeys = [...new Set(spec.goldKeys ?? [])].sort();
  if (goldKeys.length > 0 || spec.goldVisibleToRun === true) parts.push({ goldKeys, goldVisibleToRun: spec.goldVisibleToRun === true });
  // canonicalRefJson canonicalises any JSON value (it only special-cases objects holding $ref).
  const text = canonicalRefJson(parts as unknown as Ref);
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The evaluation cache (`keys.evalCache(hash)`): the `ok` Result of an evaluation, kept
 * `ttlMs` (the producer's `retainMs`). A repeated evaluation (any run, same content hash) is
 * answered from it without a job: the stored Result with this lease's ids, `cached: true`,
 * `worker: null`, no cost receipts (no rollout ran) and zero timings. Only `ok` Results are
 * stored: a model, infrastructure or caller outcome is run again next time.
 */
export class EvaluationCache {
  constructor(private readonly redis: Redis, private readonly keys: QueueKeys, private readonly ttlMs: number) {}

  /**
   * Cached answers for `leases` (leaseId → hash), by lease id; one MGET. Each answer carries its
   * own lease's `meta` (the content hash leaves meta out: an evaluation tagged otherwise is the
   * same evaluation), never the stored Result's.
   */
  async lookup(leases: readonly { leaseId: string; taskId: string; runId: string; hash: string; meta?: unknown }[], nowIso: string): Promise<Map<string, Result>> {
    const hits = new Map<string, Result>();
    if (leases.length === 0) return hits;
    const stored = await this.redis.mget(...leases.map(({ hash }) => this.keys.evalCache(hash)));
    leases.forEach(({ leaseId, taskId, runId, meta }, i) => {
      const json = stored[i];
      if (!json) return;
      try {
        const parsed = parseResult(JSON.parse(json));
        if (!parsed.success) return;
        hits.set(leaseId, withMeta({
          ...parsed.data, leaseId, runId, taskId, cached: true, worker: null, cost: [], attempts: 0, redispatched: 0, queuedMs: 0, runMs: 0, finishedAt: nowIso,
        }, meta));
      } catch {
        // A foreign value: not a hit.
      }
    });
    return hits;
  }

  /** Stores an `ok` evaluation Result under its hash (first one wins while it lives). */
  async store(hash: string, result: Result): Promise<void> {
    if (result.kind !== 'ok' || result.cached) return;
    await this.redis.set(this.keys.evalCache(hash), JSON.stringify(result), 'PX', Math.max(1, this.ttlMs), 'NX');
  }
}

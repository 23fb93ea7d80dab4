import type { Redis } from 'ioredis';
import { CostReceiptSchema, CostTally, type CostReceipt, type CostSummary } from '../spec/index.js';
import type { QueueKeys } from './keys.js';

/** Lease hashes read per pipeline. */
const BATCH = 500;

/**
 * The cost of a run as recorded so far: every `cost:<callId>` receipt the workers stored in the
 * run's lease hashes (`keys.lease(leaseId)`, first write wins), each call id counted once. Read
 * from Redis, not from delivered Results, so receipts of a rollout whose worker died (or is
 * still running) count too. Malformed receipts are skipped.
 */
export async function readRunCost(redis: Redis, keys: QueueKeys, runId: string): Promise<CostSummary> {
  const leaseIds = await redis.zrange(keys.runLeases(runId), 0, -1);
  const tally = new CostTally();
  for (let i = 0; i < leaseIds.length; i += BATCH) {
    const pipe = redis.pipeline();
    for (const leaseId of leaseIds.slice(i, i + BATCH)) pipe.hgetall(keys.lease(leaseId));
    const batch = leaseIds.slice(i, i + BATCH);
    for (const [j, [err, hash]] of ((await pipe.exec()) ?? []).entries()) {
      if (err || !hash) continue;
      const receipts: CostReceipt[] = [];
      for (const [field, json] of Object.entries(hash as Record<string, string>)) {
        if (!field.startsWith('cost:')) continue;
        try {
          const parsed = CostReceiptSchema.safeParse(JSON.parse(json));
          if (parsed.success) receipts.push(parsed.data);
        } catch {
          // Not JSON: skipped.
        }
      }
      tally.add(receipts, batch[j]);
    }
  }
  return tally.summary();
}

/**
 * A coordinator in its own process, for crash tests (kill it with SIGKILL, then resume):
 * runs `mapRollouts` over RQ_COUNT drafts (task ids t0…, `delayMs` RQ_DELAY_MS) and, for each
 * Result, appends its JSON line to RQ_OUT and prints "result <leaseId>" on stdout; prints
 * "done" at the end. Env: REDIS_URL, RQ_QUEUE, RQ_PREFIX, RQ_RUN_ID, RQ_COUNT, RQ_OUT,
 * RQ_MAX_IN_FLIGHT (default 500), RQ_MAX_UNACKNOWLEDGED (default: the producer's), RQ_DELAY_MS (default 0).
 * Run: node --import ./test/helpers/ts-loader.mjs test/helpers/producer-child.ts
 */
import { appendFileSync } from 'node:fs';
import { RolloutQueue } from '../../src/producer/index.js';
import { createLogger } from '../../src/platform/logger.js';
import { drafts } from './rollout-drafts.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`producer-child needs env ${name}`);
  return value;
};

const rq = await RolloutQueue.create({
  redisUrl: env('REDIS_URL'),
  queue: env('RQ_QUEUE'),
  prefix: env('RQ_PREFIX'),
  maxInFlight: Number(process.env.RQ_MAX_IN_FLIGHT ?? 500),
  ...(process.env.RQ_MAX_UNACKNOWLEDGED ? { maxUnacknowledged: Number(process.env.RQ_MAX_UNACKNOWLEDGED) } : {}),
  reconcileMs: 200,
  logger: createLogger({ component: 'producer-child' }, { write: () => undefined } as never),
});
const list = drafts(Number(env('RQ_COUNT')), { delayMs: Number(process.env.RQ_DELAY_MS ?? 0) });
for await (const result of rq.mapRollouts(list, { runId: env('RQ_RUN_ID') })) {
  appendFileSync(env('RQ_OUT'), `${JSON.stringify(result)}\n`);
  process.stdout.write(`result ${result.leaseId}\n`);
}
process.stdout.write('done\n');
await rq.close();

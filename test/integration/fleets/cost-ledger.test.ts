import { describe, expect, it } from 'vitest';
import { formatSummary } from '../../../src/cli/summary.js';
import { RunTally, toResultLine } from '../../../src/cli/run-tally.js';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { fleetFixture } from './fleet-fixture.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// The cost ledger: receipts are durable per lease (they survive a SIGKILLed worker), counted once
// per call id in the Result, the summary and status; a ceiling stops dispatch.
const fx = fleetFixture();
const { workers, closers, silent } = fx;
const CALLS = {
  'call-1': { usd: 0.02, label: 'gpt-x', units: { inputTokens: 1000, outputTokens: 200 } },
  'call-2': { usd: 0.01, label: 'judge', units: { inputTokens: 500 } },
};

describe('cost ledger', () => {
  it('a rollout whose worker was SIGKILLed after two paid calls: each receipt counted once in the Result, the summary and status', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    const first = await startWorkerProcess(raw.workerOptions({ name: 'dies', concurrency: 1, lockDurationMs: 1000, stalledIntervalMs: 500 }));
    workers.push(first);
    const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, logger: silent });
    closers.push(() => rq.close());
    const draft: RolloutDraft = { rendered: 'x', task: { id: 'paid' }, run: fixture('paysCalls', { calls: CALLS, hangFirstAttempt: true }), reward: fixture('constant') };
    const results = rq.mapRollouts([draft], { runId: 'ledger' });
    const next = results.next();
    // Both receipts stored durably by the first worker before it dies.
    await waitFor(async () => (await raw.redis.hkeys(raw.keys.lease('ledger.paid'))).filter((f) => f.startsWith('cost:')).length === 2, 'two receipts stored', 20_000);
    await first.kill();
    const second = await startWorkerProcess(raw.workerOptions({ name: 'takes-over', concurrency: 1, lockDurationMs: 1000, stalledIntervalMs: 500 }));
    workers.push(second);
    const { value } = (await next) as { value: Result };
    expect((await results.next()).done).toBe(true);
    expect(value).toMatchObject({ kind: 'ok', worker: 'takes-over', redispatched: 1 });
    // Attempt 2 repeated both calls (same call ids): still two receipts.
    expect(value.cost.map((r) => r.id).sort()).toEqual(['paid-call-1', 'paid-call-2']);

    const tally = new RunTally();
    tally.add(toResultLine(value));
    expect(toResultLine(value).cost).toEqual(value.cost);
    const summary = formatSummary({ runId: 'ledger', total: 1, end: 'completed', tally, counters: undefined, file: '/tmp/x.jsonl' });
    expect(summary).toMatch(/cost\s+\$0\.0300 \(2 receipts\); inputTokens 1500, outputTokens 200; per model: gpt-x \$0\.0200 \(1\), judge \$0\.0100 \(1\)/);

    const status = await rq.status('ledger');
    expect(status.cost).toMatchObject({ receipts: 2, units: { inputTokens: 1500, outputTokens: 200 } });
    expect(status.cost?.totalUsd).toBeCloseTo(0.03, 10);
  });

  it('unknown cost is null, never 0', async () => {
    const tally = new RunTally();
    expect(tally.cost.summary().totalUsd).toBeNull();
    expect(formatSummary({ runId: 'r', total: 0, end: 'completed', tally, counters: undefined, file: '/tmp/x' })).toMatch(/cost\s+unknown \(no receipts\)/);
  });

  it('costCeilingUsd stops dispatching new leases once reached, saying so; leases after it never run', async () => {
    const raw = new RawQueue(fx.redis.url);
    closers.push(() => raw.close());
    workers.push(await startWorkerProcess(raw.workerOptions({ name: 'payer', concurrency: 1 })));
    const rq = await RolloutQueue.create({ redisUrl: fx.redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, maxInFlight: 1, costCeilingUsd: 0.025, logger: silent });
    closers.push(() => rq.close());
    const drafts: RolloutDraft[] = Array.from({ length: 6 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}` }, run: fixture('paysCalls', { calls: { c: { usd: 0.01 } } }), reward: fixture('constant') }));
    const items: Result[] = [];
    let error: Error | undefined;
    try {
      for await (const result of rq.mapRollouts(drafts, { runId: 'ceiling' })) items.push(result);
    } catch (err) {
      error = err as Error;
    }
    expect(items.map((r) => [r.kind, r.error?.message])).toEqual([["ok", undefined], ["ok", undefined], ["ok", undefined]]);
    expect(error?.name).toBe('RunStoppedError');
    expect(error?.message).toMatch(/cost ceiling reached: \$0\.0300 of costCeilingUsd \$0\.025/);
    const status = await rq.status('ceiling');
    expect(status.run).toMatchObject({ status: 'stopped', enqueued: 3 });
    expect(status.cost?.receipts).toBe(3);
  });
});

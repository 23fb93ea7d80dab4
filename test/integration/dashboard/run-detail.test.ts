import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRunDetail } from '../../../src/dashboard/run-detail.js';
import { listRuns } from '../../../src/dashboard/run-list.js';
import { runDetailPage, runsListPage } from '../../../src/dashboard/runs-html.js';
import { bullJobKey, placementQueueName, queueKeys, RUN_FIELDS } from '../../../src/lease/index.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// The runs view's read model against a real Redis holding one run in each state a lease can end
// in: a Result in the base queue and in a placement queue, a job BullMQ failed at its stall
// limit, a coordinator verdict (NoWorker), a quarantined lease with forensics, cost receipts,
// and one lease still unfinished. Written with the project's own key builders.
const prefix = 'rd';
const queue = 'detail';
const runId = 'r1';
let redis: TestRedis;
let client: Redis;

const result = (task: string, kind: string, reward: number | null, type: string | null, worker: string) =>
  JSON.stringify({ leaseId: `${runId}.${task}`, runId, taskId: task, kind, output: null, reward, error: type ? { type, message: 'm' } : null, attempts: 1, redispatched: 0, worker, queuedMs: 1, runMs: 1, finishedAt: '2026-01-01T00:00:05.000Z', cost: [] });

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
  const keys = queueKeys(prefix, queue);
  const placed = placementQueueName(queue, { gpu: 'h100' });
  const created = Date.parse('2026-01-01T00:00:00.000Z');
  await client.hset(keys.run(runId), { [RUN_FIELDS.status]: 'running', [RUN_FIELDS.runAttemptId]: 'a1', [RUN_FIELDS.createdAt]: new Date(created).toISOString(), [RUN_FIELDS.specCount]: '6', [RUN_FIELDS.enqueued]: '6', [RUN_FIELDS.redispatched]: '3', [RUN_FIELDS.duplicatesDropped]: '1' });
  await client.sadd(keys.runs(), runId);
  await client.sadd(keys.runDelivered(runId), `${runId}.t1`, `${runId}.t2`);
  await client.zadd(keys.runLeases(runId), 1, `${runId}.t1`, 2, `${runId}.t2`, 3, `${runId}.t3`, 4, `${runId}.t4`, 5, `${runId}.t5`, 6, `${runId}.t6`);
  await client.hset(keys.placements(), placed, '{"labels":{"gpu":"h100"},"class":"rollout"}');
  await client.hset(bullJobKey(prefix, queue, `${runId}.t1`), { returnvalue: result('t1', 'ok', 1, null, 'w1'), finishedOn: String(created + 1000) });
  await client.hset(bullJobKey(prefix, placed, `${runId}.t2`), { returnvalue: result('t2', 'ok', 0.25, null, 'gpu-w'), finishedOn: String(created + 2000) });
  await client.hset(bullJobKey(prefix, queue, `${runId}.t3`), { failedReason: 'job stalled more than allowable limit', finishedOn: String(created + 3000), pb: 'w1' });
  await client.hset(keys.runVerdicts(runId), `${runId}.t4`, result('t4', 'infrastructure', null, 'NoWorker', 'coordinator'));
  await client.hset(bullJobKey(prefix, queue, `${runId}.t5`), { returnvalue: result('t5', 'model', null, 'NonZeroExit', 'w1'), finishedOn: String(created + 4000) });
  await client.hset(bullJobKey(prefix, queue, `${runId}.t6`), { data: '{}', timestamp: String(created) });
  await client.hset(keys.runQuarantined(runId), `${runId}.t3`, JSON.stringify({ reason: 'worker lost 3 times at /srv/app/node_modules/x/y.js', exitCode: 137, signal: 'SIGKILL', stderrTail: 'line one\n<script>alert(1)</script> at 10.0.0.5:6379' }));
  await client.hset(keys.lease(`${runId}.t1`), 'cost:c1', JSON.stringify({ id: 'c1', usd: 0.5, label: 'judge' }));
  await client.hset(keys.lease(`${runId}.t2`), 'cost:c2', JSON.stringify({ id: 'c2', usd: 0.25, label: 'judge' }));
});

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

describe('one run as the runs view reads it', () => {
  it('counts every finished lease, wherever its Result is, by kind and error type; the unfinished one is not finished', async () => {
    const detail = await readRunDetail(client, prefix, queue, runId, Date.parse('2026-01-01T00:00:10.000Z'));
    expect(detail).toBeDefined();
    expect(detail?.leases).toEqual({ total: 6, read: 6 });
    expect(detail?.finished).toBe(5);
    expect(detail?.kinds).toEqual({ ok: 2, model: 1, infrastructure: 2, caller: 0 });
    expect(detail?.errorTypes.infrastructure).toEqual([['NoWorker', 1], ['WorkerLost', 1]]);
    expect(detail?.errorTypes.model).toEqual([['NonZeroExit', 1]]);
    expect(detail?.rewards).toMatchObject({ count: 2, mean: 0.625, min: 0, max: 1, bins: [0, 0, 1, 0, 0, 0, 0, 0, 0, 1] });
    expect(detail?.workers).toEqual([['w1', 3], ['coordinator', 1], ['gpu-w', 1]]);
    expect(detail?.throughput.counts.reduce((a, b) => a + b, 0)).toBe(5);
    expect(detail?.cost).toMatchObject({ totalUsd: 0.75, receipts: 2 });
    expect(detail?.record).toMatchObject({ redispatched: 3, duplicatesDropped: 1, delivered: 2 });
  });

  it('shows quarantined leases with exit code, signal and the last stderr line, as public text, HTML-escaped', async () => {
    const detail = await readRunDetail(client, prefix, queue, runId);
    expect(detail?.quarantined).toEqual([{ leaseId: `${runId}.t3`, reason: 'worker lost 3 times at …/x/y.js', exitCode: '137', signal: 'SIGKILL', stderrTail: '<script>alert(1)</script> at [address]' }]);
    const html = runDetailPage(detail!);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; at [address]');
    expect(html).not.toContain('<script>');
    expect(html).toContain('<meta http-equiv="refresh" content="2">');
  });

  it('lists the run with its progress, age and rate; an unknown run has no page', async () => {
    const rows = await listRuns(client, prefix, [queue, 'other'], Date.parse('2026-01-01T00:00:10.000Z'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ queue, ageMs: 10_000, perSecond: 0.2 });
    expect(runsListPage(rows)).toMatch(/<tr data-run="r1"><td>detail<\/td>.*running.* 2 \/ 6 \(33%\).*10s.*12\.0\/min/);
    expect(await readRunDetail(client, prefix, queue, 'nope')).toBeUndefined();
  });
});

// queueKeys: every key of ours sits under "<prefix>:<queue>:~", a family BullMQ never uses,
// so no lease id can make one of our keys collide with a BullMQ key.
import { QueueKeys as BullQueueKeys } from 'bullmq';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PREFIX, DEFAULT_QUEUE, leaseIdFor, queueKeys, type QueueKeys } from '../../../src/lease/index.js';

const runIdArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
const leaseIdArb = fc.tuple(runIdArb, fc.string({ minLength: 1, maxLength: 20, unit: 'binary' })).map(([runId, key]) => leaseIdFor(runId, key));
const nameArb = fc.stringMatching(/^[A-Za-z0-9_{}-]{1,12}$/);

/** Every key of ours for these ids. */
function ourKeys(keys: QueueKeys, runId: string, leaseId: string): string[] {
  return [
    keys.run(runId), keys.runLeases(runId), keys.runDelivered(runId), keys.runQuarantined(runId),
    keys.runArtifact(runId, 'a'.repeat(64)), keys.runArtifacts(runId), keys.runVerdicts(runId), keys.runEnqueuedAt(runId),
    keys.runs(), keys.lease(leaseId), keys.cancelChannel(), keys.writeProbe(),
  ];
}

/** The keys BullMQ uses for a queue and for one job of it (bullmq src/classes/queue-keys.ts, job.ts, lua scripts). */
function bullmqKeys(prefix: string, queue: string, jobId: string): string[] {
  const keys = new BullQueueKeys(prefix);
  const job = keys.toKey(queue, jobId);
  return [
    ...Object.values(keys.getKeys(queue)),
    job,
    ...['lock', 'logs', 'dependencies', 'processed', 'failed', 'unsuccessful'].map((suffix) => `${job}:${suffix}`),
    keys.toKey(queue, `repeat:${jobId}`),
    keys.toKey(queue, `de:${jobId}`),
  ];
}

describe('queueKeys', () => {
  it('defaults to prefix "rq" and queue "rollouts"', () => {
    const keys = queueKeys();
    expect([keys.prefix, keys.queue]).toStrictEqual([DEFAULT_PREFIX, DEFAULT_QUEUE]);
    expect(keys.run('r1')).toBe('rq:rollouts:~run:r1');
    expect(keys.lease('r1.t1')).toBe('rq:rollouts:~lease:r1.t1');
  });

  it('puts every key under "<prefix>:<queue>:~"', () => {
    fc.assert(
      fc.property(nameArb, nameArb, runIdArb, leaseIdArb, (prefix, queue, runId, leaseId) => {
        for (const key of ourKeys(queueKeys(prefix, queue), runId, leaseId)) expect(key.startsWith(`${prefix}:${queue}:~`)).toBe(true);
      }),
    );
  });

  it('never collides with a BullMQ key, for any lease id', () => {
    fc.assert(
      fc.property(nameArb, nameArb, runIdArb, leaseIdArb, leaseIdArb, (prefix, queue, runId, leaseId, jobId) => {
        const ours = ourKeys(queueKeys(prefix, queue), runId, leaseId);
        const theirs = bullmqKeys(prefix, queue, jobId);
        for (const key of theirs) {
          expect(ours).not.toContain(key);
          // No BullMQ key, nor anything BullMQ derives from one by appending, enters our family.
          expect(key.startsWith(`${prefix}:${queue}:~`)).toBe(false);
        }
        // Nor does ours sit inside a job's family "<prefix>:<queue>:<jobId>:…".
        for (const key of ours) expect(key.startsWith(`${prefix}:${queue}:${jobId}:`)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('gives distinct keys to distinct runs and leases', () => {
    fc.assert(
      fc.property(runIdArb, runIdArb, leaseIdArb, leaseIdArb, (runA, runB, leaseA, leaseB) => {
        fc.pre(runA !== runB && leaseA !== leaseB);
        const keys = queueKeys();
        const all = [...ourKeys(keys, runA, leaseA), ...ourKeys(keys, runB, leaseB)];
        // runs(), cancelChannel() and writeProbe() are per queue, so they appear twice.
        expect(new Set(all).size).toBe(all.length - 3);
      }),
    );
  });

  it('separates queues and prefixes', () => {
    expect(queueKeys('rq', 'a').run('r')).not.toBe(queueKeys('rq', 'b').run('r'));
    expect(queueKeys('p1', 'a').run('r')).not.toBe(queueKeys('p2', 'a').run('r'));
  });

  it('accepts Redis Cluster hash tags in the prefix', () => {
    expect(queueKeys('{rq}', 'rollouts').runs()).toBe('{rq}:rollouts:~runs');
  });

  it.each([
    ['queue', 'rq', 'roll:outs'],
    ['queue', 'rq', 'roll outs'],
    ['queue', 'rq', ''],
    ['queue', 'rq', 'q~'],
    ['prefix', 'r:q', 'rollouts'],
    ['prefix', 'r\nq', 'rollouts'],
    ['prefix', '', 'rollouts'],
  ])('refuses a bad %s (prefix %j, queue %j), naming the field', (field, prefix, queue) => {
    expect(() => queueKeys(prefix, queue)).toThrow(new RegExp(`^${field} `));
  });
});

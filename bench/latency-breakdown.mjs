#!/usr/bin/env node
// Where one rollout's submit→Result latency goes: runs rollouts one at a time (worker and
// coordinator in this process, as `submit→Result p50` of bench/suite.mjs) and stamps each step
// by wrapping the methods that perform it; prints, per step, the median time since the
// `rollout()` call and the median gap to the previous step (steps after 'Result returned' run in
// the background; the next rollout starts once they are done). A diagnostic, not a benchmark:
// the wrappers cost a little, and the step list follows the code's internals.
// Usage: REDIS_URL=redis://127.0.0.1:PORT node bench/latency-breakdown.mjs [N=100]
import { performance } from 'node:perf_hooks';
import { Job } from 'bullmq';
import { RolloutQueue } from '../dist/producer/index.js';
import { RolloutWorker } from '../dist/consumer/index.js';
import { createLogger } from '../dist/platform/logger.js';
import { RolloutChild } from '../dist/consumer/rollout-child.js';
import { RolloutProcessor } from '../dist/consumer/rollout-processor.js';
import { stamper } from './bench-redis.mjs';
import { LeaseTracker } from '../dist/producer/lease-tracker.js';
import { RunStore } from '../dist/producer/run-store.js';
import { PlacementQueues } from '../dist/producer/placement-queues.js';
import { CoordinatorLease } from '../dist/producer/coordinator-lease.js';

const url = process.env.REDIS_URL;
if (!url) throw new Error('set REDIS_URL to a private Redis');
const N = Number(process.argv[2] ?? 100);

/** Marks of the rollout being traced (step → ms), or null between rollouts. */
let marks = null;
const mark = (step) => {
  if (marks && !(step in marks)) marks[step] = performance.now();
};
const stamp = stamper(mark);
stamp(CoordinatorLease, 'acquire', 'coordinator lease: acquire', 'coordinator lease: acquired (+ run head, record)');
stamp(RunStore.prototype, 'checkAndStamp', null, 'lease flags read + clock stamped');
stamp(PlacementQueues.prototype, 'addBulk', null, 'job added (addBulk done)');
stamp(RunStore.prototype, 'recordLeases', null, 'leases recorded');
stamp(RolloutProcessor.prototype, 'noteStart', 'worker: job start', 'worker: start noted');
stamp(RolloutChild.prototype, 'run', 'worker: IPC to child sent', 'worker: child done received');
stamp(RolloutProcessor.prototype, 'noteFinish', null, 'worker: finish noted');
stamp(Job.prototype, 'moveToCompleted', 'worker: moveToFinished sent', 'worker: moveToFinished done');
stamp(LeaseTracker.prototype, 'finish', 'coordinator: QueueEvents completed', null);
stamp(RunStore.prototype, 'acknowledgeMany', null, 'coordinator: ack done');
stamp(RunStore.prototype, 'setStatus', null, 'coordinator: run marked completed');
stamp(CoordinatorLease.prototype, 'release', 'coordinator: retention applied', 'coordinator: lease released');

const logger = createLogger({}, { write: () => true });
const queue = `latency-${process.pid}`;
const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency: 2, allow: ['rq-fixtures/*'], logger });
const rq = await RolloutQueue.create({ redisUrl: url, queue, logger, maxInFlight: 2000 });
const draft = (i) => ({ rendered: 'x', task: { id: `t-${i}` }, run: { $ref: 'rq-fixtures/failures:echo', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} } });
for (let i = 0; i < 20; i++) await rq.rollout(draft(`w${i}`), { runId: `latency-${process.pid}-w${i}` });

const traces = [];
for (let i = 0; i < N; i++) {
  marks = {};
  const t0 = performance.now();
  await rq.rollout(draft(i), { runId: `latency-${process.pid}-${i}` });
  const total = performance.now() - t0;
  // The run's wrap-up after the return (completion mark, retention, lease release) is stamped too.
  await rq.settled?.();
  const own = marks;
  marks = null;
  traces.push({ t0, total, marks: own });
}
const median = (values) => {
  const sorted = values.filter((v) => v !== undefined).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const steps = [...new Set(traces.flatMap((t) => Object.keys(t.marks)))]
  .map((step) => [step, median(traces.map((t) => (t.marks[step] === undefined ? undefined : t.marks[step] - t.t0)))])
  .sort((a, b) => a[1] - b[1]);
console.log(`submit→Result, one at a time, ${N} rollouts: median ms since the rollout() call | median gap to the previous step`);
let previous = 0;
for (const [step, at] of [...steps, ['Result returned', median(traces.map((t) => t.total))]].sort((a, b) => a[1] - b[1])) {
  console.log(`${step.padEnd(40)} ${at.toFixed(2).padStart(7)} ${(at - previous).toFixed(2).padStart(7)}`);
  previous = at;
}
await rq.close();
await worker.close();

#!/usr/bin/env node
// Where the wall time of `1 000 rollouts awaiting 50 ms, c=50` (bench/suite.mjs) goes: the same
// burst in a fresh process (worker and coordinator in it, children warm), with every step of
// every rollout stamped by wrapping the methods that perform it. Prints, per step, when it
// happened (first / p10 / p50 / p90 / last, ms since mapRollouts), then every 200 ms how many
// rollouts were in the worker, in a child, finished but not yet yielded, and enqueued but not
// started. A diagnostic, not a benchmark (the wrappers cost a little).
// Usage: REDIS_URL=redis://127.0.0.1:PORT node bench/burst-timeline.mjs [N=1000] [C=50] [DELAY_MS=50]
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

const url = process.env.REDIS_URL;
if (!url) throw new Error('set REDIS_URL to a private Redis');
const N = Number(process.argv[2] ?? 1000);
const C = Number(process.argv[3] ?? 50);
const delayMs = Number(process.argv[4] ?? 50);

let t0 = 0;
let on = false;
/** step → times (ms since mapRollouts), in the order they happened. */
const events = {};
const mark = (step) => {
  if (on) (events[step] ??= []).push(performance.now() - t0);
};
const stamp = stamper(mark);
stamp(PlacementQueues.prototype, 'addBulk', 'addBulk sent', 'addBulk done');
stamp(RolloutProcessor.prototype, 'noteStart', 'worker: job start', 'worker: start noted');
stamp(RolloutChild.prototype, 'run', 'worker: IPC to child sent', 'worker: child done');
stamp(RolloutProcessor.prototype, 'noteFinish', null, 'worker: finish noted');
stamp(Job.prototype, 'moveToCompleted', null, 'worker: moveToFinished done');
stamp(LeaseTracker.prototype, 'finish', 'coordinator: Result ready', null);
stamp(RunStore.prototype, 'acknowledgeMany', null, 'coordinator: ack call done');
// One mark per Result handed to the consumer (acknowledgements go in batches, so not per ack call).
const takeReady = LeaseTracker.prototype.takeReady;
LeaseTracker.prototype.takeReady = function () {
  const result = takeReady.call(this);
  if (result) mark('coordinator: yielded');
  return result;
};
// A child's first rollout loads the Ref modules and runs cold code: timed apart.
const childRoundTrip = { first: [], later: [] };
{
  const run = RolloutChild.prototype.run;
  RolloutChild.prototype.run = function (...args) {
    const first = !this.benchSeen;
    this.benchSeen = true;
    const started = performance.now();
    const out = run.apply(this, args);
    out.then(() => on && childRoundTrip[first ? 'first' : 'later'].push(performance.now() - started));
    return out;
  };
}

const logger = createLogger({}, { write: () => true });
const queue = `burst-${process.pid}`;
const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency: C, allow: ['rq-fixtures/*'], logger });
const rq = await RolloutQueue.create({ redisUrl: url, queue, logger, maxInFlight: 2000 });
const drafts = Array.from({ length: N }, (_, i) => ({ rendered: 'x', task: { id: `t-${i}`, delayMs }, run: { $ref: 'rq-fixtures/failures:echo', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} } }));

t0 = performance.now();
on = true;
const elu0 = performance.eventLoopUtilization();
const cpu0 = process.cpuUsage();
for await (const result of rq.mapRollouts(drafts, { runId: `burst-${process.pid}` })) {
  if (result.kind !== 'ok') throw new Error(`unexpected ${result.kind}`);
}
const wall = performance.now() - t0;
on = false;
const elu = performance.eventLoopUtilization(elu0).utilization;
const cpu = process.cpuUsage(cpu0);

const quantile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
};
const median = (values) => quantile(values, 0.5);
console.log(`${N} rollouts awaiting ${delayMs} ms, c=${C}: wall ${wall.toFixed(0)} ms; main process: event loop busy ${(elu * 100).toFixed(0)} %, CPU ${((cpu.user + cpu.system) / 1000 / N).toFixed(2)} ms per rollout`);
console.log(`${'step'.padEnd(30)} count  first    p10    p50    p90   last`);
for (const [step, times] of Object.entries(events).sort((a, b) => quantile(a[1], 0) - quantile(b[1], 0))) {
  console.log(`${step.padEnd(30)} ${String(times.length).padStart(5)} ${[0, 0.1, 0.5, 0.9, 1].map((p) => quantile(times, p).toFixed(0).padStart(6)).join(' ')}`);
}
const count = (step, t) => (events[step] ?? []).filter((x) => x <= t).length;
const series = (from, to, scale = 1) => {
  const out = [];
  for (let t = 0; t <= wall + 200; t += 200) out.push(scale * count(from, t) - count(to, t));
  return out.join(' ');
};
console.log('every 200 ms:');
console.log(`  in the worker (job start → moveToFinished done): ${series('worker: job start', 'worker: moveToFinished done')}`);
console.log(`  in a child (IPC sent → child done):              ${series('worker: IPC to child sent', 'worker: child done')}`);
console.log(`  Result ready, not yet yielded:                   ${series('coordinator: Result ready', 'coordinator: yielded')}`);
const batch = (events['addBulk sent']?.length ?? 0) > 0 ? N / events['addBulk sent'].length : 0;
console.log(`  enqueued (addBulk done), not started:            ${series('addBulk done', 'worker: job start', batch)}`);
console.log(`child round trip (IPC sent → done), median: a child's first rollout ${median(childRoundTrip.first)?.toFixed(1)} ms (${childRoundTrip.first.length}), later ${median(childRoundTrip.later)?.toFixed(1)} ms (${childRoundTrip.later.length})`);
await rq.close();
await worker.close();

import { Counter, Gauge, Registry } from 'prom-client';
import { registerProcessMetrics } from '../platform/process-metrics.js';
import { scrapeRead } from '../platform/scrape-read.js';
import type { ResultKind } from '../spec/index.js';
import type { RolloutQueue } from './rollout-queue.js';
import type { QueueStatus } from './queue-status.js';

/** Longest a scrape waits for Redis, ms: a scrape must not hang while Redis is down. */
const READ_MS = 2000;

const KINDS: readonly ResultKind[] = ['ok', 'model', 'infrastructure', 'caller'];
const DEPTH_STATES = ['waiting', 'active', 'delayed', 'prioritized'] as const;

/**
 * Prometheus metrics of a coordinator (a process iterating `mapRollouts` / `attach`), read from
 * the run records in Redis at scrape time, so they are right across coordinator restarts and
 * agree with `rollout-queue status`. Opt-in: nothing is served unless you serve
 * {@link registry} (the CLI does with `run --metrics-port P`; a library user with
 * `serveMetrics`, or by merging the registry into their own with prom-client's `Registry.merge`).
 *
 * Per run (`run_id` label) of the runs given to {@link track}:
 * - `rollout_queue_run_specs`: specs of the run (absent while unknown, streamed drafts);
 * - `rollout_queue_run_in_flight`: leases enqueued and not yet delivered (waiting, running, or
 *   finished and awaiting delivery);
 * - `rollout_queue_run_delivered_total{kind}`: Results delivered to the coordinator;
 * - `rollout_queue_run_duplicates_dropped_total`: late answers refused (first answer won);
 * - `rollout_queue_run_redispatched_total`: re-dispatches of the run's leases.
 * For the whole queue: `rollout_queue_queue_jobs{queue,state}`, `rollout_queue_redis_up`, plus
 * `rollout_queue_info{role="coordinator"}` and prom-client's process metrics.
 */
export class CoordinatorMetrics {
  readonly registry = new Registry();
  private readonly runIds = new Set<string>();

  constructor(private readonly queue: RolloutQueue) {
    registerProcessMetrics(this.registry, 'coordinator');
    const registers = [this.registry];
    const read = scrapeRead(
      async (): Promise<[QueueStatus, ...QueueStatus[]]> => Promise.all([this.queue.status(), ...[...this.runIds].map((runId) => this.queue.status(runId))]),
      READ_MS,
    );
    /** A metric filled from the shared read of this scrape: reset, then `fill` when Redis answered. */
    const fromRead = (fill: (whole: QueueStatus, runs: QueueStatus['run'][]) => void) =>
      async function collect(this: { reset(): void }): Promise<void> {
        const reads = await read();
        this.reset();
        if (reads) fill(reads[0], reads.slice(1).map((status) => status.run));
      };
    const perRun = (runs: QueueStatus['run'][], each: (run: NonNullable<QueueStatus['run']>, labels: { run_id: string }) => void): void => {
      for (const run of runs) if (run) each(run, { run_id: run.runId });
    };
    const specs: Gauge = new Gauge({ name: 'rollout_queue_run_specs', help: 'Specs of the run', labelNames: ['run_id'], registers,
      collect: fromRead((_, runs) => perRun(runs, (run, labels) => run.specCount !== null && specs.set(labels, run.specCount))) });
    const inFlight: Gauge = new Gauge({ name: 'rollout_queue_run_in_flight', help: 'Leases of the run enqueued and not yet delivered to the coordinator', labelNames: ['run_id'], registers,
      collect: fromRead((_, runs) => perRun(runs, (run, labels) => inFlight.set(labels, Math.max(0, run.enqueued - run.delivered)))) });
    const delivered: Counter = new Counter({ name: 'rollout_queue_run_delivered_total', help: 'Results of the run delivered to the coordinator, by kind', labelNames: ['run_id', 'kind'], registers,
      collect: fromRead((_, runs) => perRun(runs, (run, labels) => KINDS.forEach((kind) => delivered.inc({ ...labels, kind }, run.kinds[kind])))) });
    const duplicates: Counter = new Counter({ name: 'rollout_queue_run_duplicates_dropped_total', help: 'Late answers for leases of the run already answered (dropped; first answer wins)', labelNames: ['run_id'], registers,
      collect: fromRead((_, runs) => perRun(runs, (run, labels) => duplicates.inc(labels, run.duplicatesDropped))) });
    const redispatched: Counter = new Counter({ name: 'rollout_queue_run_redispatched_total', help: "Re-dispatches of the run's leases (stall, child crash, hang)", labelNames: ['run_id'], registers,
      collect: fromRead((_, runs) => perRun(runs, (run, labels) => redispatched.inc(labels, run.redispatched))) });
    const depth: Gauge = new Gauge({ name: 'rollout_queue_queue_jobs', help: 'Jobs of the queue by BullMQ state, all runs together', labelNames: ['queue', 'state'], registers,
      collect: fromRead((whole) => DEPTH_STATES.forEach((state) => depth.set({ queue: whole.queue, state }, whole.counts[state] ?? 0))) });
    new Gauge({ name: 'rollout_queue_redis_up', help: '1 while this process reaches Redis, else 0', registers,
      async collect() {
        this.set((await read()) ? 1 : 0);
      } });
  }

  /** Reports this run from the next scrape on (idempotent). */
  track(runId: string): void {
    this.runIds.add(runId);
  }
}

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from '../platform/process-metrics.js';
import { scrapeRead } from '../platform/scrape-read.js';
import type { ResultKind } from '../spec/index.js';

/** BullMQ job states the queue-depth gauge reports (BullMQ `getJobCounts`). */
export const QUEUE_DEPTH_STATES = ['waiting', 'active', 'delayed', 'prioritized'] as const;

/** What the metrics read from their worker at scrape time. */
export interface WorkerProbe {
  /** Queue name (the `queue` label). */
  readonly queue: string;
  /** Rollout slots of the worker (`concurrency`). */
  readonly slots: number;
  /** Rollouts running now. */
  slotsBusy(): number;
  /** Live rollout child processes (shared and solo) hosting the slots. */
  children(): number;
  /** False while the worker's Redis connections are down. */
  redisUp(): boolean;
  /** BullMQ job counts by state for the whole queue (all workers); may reject when Redis is down. */
  jobCounts(states: readonly string[]): Promise<Record<string, number>>;
}

/** Longest a scrape waits for the queue-depth read, ms: a scrape must not hang on a dead Redis. */
const DEPTH_READ_MS = 2000;

/** Histogram buckets for rollout run time and queue wait, seconds: 50 ms to 1 h. */
const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 900, 3600];

/**
 * Prometheus metrics of one worker process (prom-client). Names follow the Prometheus naming
 * conventions (https://prometheus.io/docs/practices/naming/): `rollout_queue_` prefix, base
 * units (`_seconds`), `_total` on counters only, and the whole scrape passes
 * `promtool check metrics` (tested). Served with `platform/metrics-endpoint.ts`.
 *
 * Counters: `results_total{kind}`, `redispatches_total{cause}`, `duplicates_dropped_total`,
 * `child_events_total{event="started|recycled|crashed"}` (crashed: the child died on its own
 * during a rollout; recycled: retired by the worker). Histograms: `run_duration_seconds`,
 * `queue_wait_seconds` (Result `queuedMs`: enqueue to start). Gauges read at scrape time:
 * `queue_jobs{queue,state}`, `worker_slots`, `worker_slots_busy`, `worker_children`, `redis_up`, plus
 * `rollout_queue_info` and prom-client's process metrics.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly results = new Counter({ name: 'rollout_queue_results_total', help: 'Results produced by this worker, by kind', labelNames: ['kind'], registers: [this.registry] });
  private readonly redispatches = new Counter({ name: 'rollout_queue_redispatches_total', help: 'Leases re-dispatched by this worker, by cause', labelNames: ['cause'], registers: [this.registry] });
  private readonly duplicates = new Counter({ name: 'rollout_queue_duplicates_dropped_total', help: 'Late answers BullMQ refused (lock lost, job gone)', registers: [this.registry] });
  private readonly children = new Counter({ name: 'rollout_queue_child_events_total', help: 'Rollout child processes started, recycled (retired by the worker) or crashed (died during a rollout)', labelNames: ['event'], registers: [this.registry] });
  private readonly runSeconds = new Histogram({ name: 'rollout_queue_run_duration_seconds', help: 'Run time of finished rollouts (child start of run to Result), seconds', buckets: DURATION_BUCKETS, registers: [this.registry] });
  private readonly queueWaitSeconds = new Histogram({ name: 'rollout_queue_queue_wait_seconds', help: 'Time from enqueue to a worker taking the rollout (Result queuedMs), seconds', buckets: DURATION_BUCKETS, registers: [this.registry] });
  private probe: WorkerProbe | undefined;
  private readonly containmentLevel = new Gauge({ name: 'rollout_queue_containment', help: 'Containment level of rollout attempts on this worker (1 for the level in use)', labelNames: ['level'], registers: [this.registry] });
  private readonly containmentGap = new Gauge({ name: 'rollout_queue_containment_gap', help: 'Boundaries this worker leaves open to the programs it runs (1 per open boundary; none at level sealed): docs/security.md', labelNames: ['boundary'], registers: [this.registry] });

  constructor() {
    registerProcessMetrics(this.registry, 'worker');
    // Every label value present from the start at 0, so rate() and alerts see the first event.
    for (const kind of ['ok', 'model', 'infrastructure', 'caller'] as const) this.results.inc({ kind }, 0);
    for (const event of ['started', 'recycled', 'crashed'] as const) this.children.inc({ event }, 0);
    const metrics = this;
    new Gauge({
      name: 'rollout_queue_worker_slots',
      help: 'Rollout slots of this worker (concurrency)',
      registers: [this.registry],
      collect() {
        if (metrics.probe) this.set(metrics.probe.slots);
      },
    });
    new Gauge({
      name: 'rollout_queue_worker_children',
      help: 'Rollout child processes of this worker now (slots share them; see docs/workers.md)',
      registers: [this.registry],
      collect() {
        if (metrics.probe) this.set(metrics.probe.children());
      },
    });
    new Gauge({
      name: 'rollout_queue_worker_slots_busy',
      help: 'Rollout slots of this worker running a rollout now',
      registers: [this.registry],
      collect() {
        if (metrics.probe) this.set(metrics.probe.slotsBusy());
      },
    });
    const depth = scrapeRead(async () => {
      const probe = metrics.probe;
      if (!probe || !probe.redisUp()) throw new Error('Redis down');
      return probe.jobCounts(QUEUE_DEPTH_STATES);
    }, DEPTH_READ_MS);
    new Gauge({
      name: 'rollout_queue_redis_up',
      help: '1 while this process reaches Redis, else 0',
      registers: [this.registry],
      async collect() {
        if (metrics.probe) this.set((await depth()) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'rollout_queue_queue_jobs',
      help: 'Jobs of the queue by BullMQ state, all workers together (read from Redis at scrape time)',
      labelNames: ['queue', 'state'],
      registers: [this.registry],
      async collect() {
        const counts = await depth();
        this.reset();
        if (!counts || !metrics.probe) return;
        for (const state of QUEUE_DEPTH_STATES) this.set({ queue: metrics.probe.queue, state }, counts[state] ?? 0);
      },
    });
  }

  /** Connects the scrape-time gauges to the worker. */
  bind(probe: WorkerProbe): void {
    this.probe = probe;
  }

  result(kind: ResultKind, runMs: number | null): void {
    this.results.inc({ kind });
    if (runMs !== null) this.runSeconds.observe(runMs / 1000);
  }
  /** A Result BullMQ accepted: its queue wait (`queuedMs`, null for a malformed job) is observed. */
  queued(queuedMs: number | null): void {
    if (queuedMs !== null) this.queueWaitSeconds.observe(queuedMs / 1000);
  }
  redispatch(cause: string): void {
    this.redispatches.inc({ cause });
  }
  duplicate(): void {
    this.duplicates.inc();
  }
  child(event: 'started' | 'recycled' | 'crashed'): void {
    this.children.inc({ event });
  }
  /** Sets `rollout_queue_containment{level}` to 1 for the level chosen at start, and `rollout_queue_containment_gap{boundary}` to 1 per open boundary. */
  containment(level: string, gaps: readonly string[] = []): void {
    this.containmentLevel.set({ level }, 1);
    for (const boundary of gaps) this.containmentGap.set({ boundary }, 1);
  }
}

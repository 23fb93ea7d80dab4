import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ResultKind } from '../spec/index.js';

/** Prometheus metrics of one worker process (prom-client), plus the HTTP endpoint. */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly results = new Counter({ name: 'rollout_queue_results_total', help: 'Results produced, by kind', labelNames: ['kind'], registers: [this.registry] });
  private readonly redispatches = new Counter({ name: 'rollout_queue_redispatches_total', help: 'Leases re-dispatched by this worker, by cause', labelNames: ['cause'], registers: [this.registry] });
  private readonly duplicates = new Counter({ name: 'rollout_queue_duplicates_dropped_total', help: 'Late answers BullMQ refused (lock lost, job gone)', registers: [this.registry] });
  private readonly children = new Counter({ name: 'rollout_queue_child_events_total', help: 'Rollout child processes started, recycled or crashed', labelNames: ['event'], registers: [this.registry] });
  private readonly runSeconds = new Histogram({ name: 'rollout_queue_run_seconds', help: 'Duration of finished rollouts, seconds', buckets: [0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900], registers: [this.registry] });
  private readonly containmentLevel = new Gauge({ name: 'rollout_queue_containment', help: 'Containment level of rollout attempts on this worker (1 for the level in use)', labelNames: ['level'], registers: [this.registry] });
  /** Rollouts running now. */
  readonly active = new Gauge({ name: 'rollout_queue_active_rollouts', help: 'Rollouts running now', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  result(kind: ResultKind, runMs: number | null): void {
    this.results.inc({ kind });
    if (runMs !== null) this.runSeconds.observe(runMs / 1000);
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
  /** Sets `rollout_queue_containment{level}` to 1 for the level chosen at start. */
  containment(level: string): void {
    this.containmentLevel.set({ level }, 1);
  }

  /**
   * Serves `GET /metrics` (Prometheus text) and `GET /healthz` (200 `ok`, or 503 with the
   * reason from `health()`, for a liveness probe).
   * @returns the server and its bound port.
   */
  async serve(port: number, host: string, health: () => { ok: boolean; reason: string }): Promise<{ server: http.Server; port: number }> {
    const server = http.createServer((req, res) => {
      if (req.url === '/metrics') {
        void this.registry.metrics().then((text) => {
          res.writeHead(200, { 'content-type': this.registry.contentType });
          res.end(text);
        });
      } else if (req.url === '/healthz') {
        const state = health();
        res.writeHead(state.ok ? 200 : 503, { 'content-type': 'text/plain' });
        res.end(`${state.ok ? 'ok' : 'unhealthy'}: ${state.reason}\n`);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address();
    return { server, port: typeof address === 'object' && address ? address.port : port };
  }
}

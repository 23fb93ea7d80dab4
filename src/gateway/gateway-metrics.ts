import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerProcessMetrics } from '../platform/process-metrics.js';

/** Histogram buckets for request time, seconds: 5 ms (a kept answer) to 1 h (a long dispatch). */
const DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 15, 60, 300, 900, 3600];

/** Routes the metrics label requests by (anything else is `other`, so a scanner cannot grow the label set). */
export const GATEWAY_ROUTES = ['dispatch', 'runs', 'run', 'results', 'ack', 'cancel', 'metrics', 'other'] as const;
export type GatewayRoute = (typeof GATEWAY_ROUTES)[number];

/**
 * Prometheus metrics of one gateway process (prom-client), named as the worker's
 * (`rollout_queue_` prefix, base units, `_total` on counters only): `gateway_requests_total{route,
 * status}`, `gateway_request_duration_seconds{route}`, `gateway_requests_in_flight`,
 * `gateway_final_answers_total` (dispatches answered with a kept final failure, see
 * `DispatchError.final`), plus `rollout_queue_info{role="gateway"}` and
 * prom-client's process metrics. Served at the gateway's own `GET /metrics`.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({ name: 'rollout_queue_gateway_requests_total', help: 'HTTP requests answered by the gateway, by route and status', labelNames: ['route', 'status'], registers: [this.registry] });
  private readonly seconds = new Histogram({ name: 'rollout_queue_gateway_request_duration_seconds', help: 'Time from a request to its answer, seconds, by route', labelNames: ['route'], buckets: DURATION_BUCKETS, registers: [this.registry] });
  private readonly inFlight = new Gauge({ name: 'rollout_queue_gateway_requests_in_flight', help: 'Requests the gateway is answering now', registers: [this.registry] });
  private readonly finals = new Counter({ name: 'rollout_queue_gateway_final_answers_total', help: 'Dispatch answers that were a kept final failure (model, or a transient after the re-dispatch budget)', registers: [this.registry] });

  constructor() {
    registerProcessMetrics(this.registry, 'gateway');
    this.requests.inc({ route: 'dispatch', status: '200' }, 0);
    this.finals.inc(0);
  }

  /** A request arrived; the returned function records its answer. */
  started(): (route: GatewayRoute, status: number, seconds: number, final: boolean) => void {
    this.inFlight.inc();
    return (route, status, seconds, final) => {
      this.inFlight.dec();
      this.requests.inc({ route, status: String(status) });
      this.seconds.observe({ route }, seconds);
      if (final) this.finals.inc();
    };
  }
}

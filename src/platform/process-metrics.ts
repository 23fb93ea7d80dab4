import { readFileSync } from 'node:fs';
import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * prom-client's default metrics that `promtool check metrics` rejects: gauges named `_total`
 * ("non-counter metrics should not have _total suffix"). Their per-type twins without the suffix
 * (`nodejs_active_handles{type}` …) stay, so nothing is lost.
 */
const PROMTOOL_REJECTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** This package's version, from its package.json (two folders above `dist/platform/`). */
export function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Registers what every rollout-queue process exports besides its own metrics: prom-client's
 * default process and Node.js metrics (minus {@link PROMTOOL_REJECTS}) and the build-info gauge
 * `rollout_queue_info{version, node_version, role} 1` (the Prometheus `_info` convention: a
 * constant 1 whose labels say what runs, for joins such as "which version do crashing workers run").
 */
export function registerProcessMetrics(registry: Registry, role: 'worker' | 'coordinator' | 'gateway'): void {
  collectDefaultMetrics({ register: registry });
  for (const name of PROMTOOL_REJECTS) registry.removeSingleMetric(name);
  const info = new Gauge({
    name: 'rollout_queue_info',
    help: 'Build information of this rollout-queue process; always 1',
    labelNames: ['version', 'node_version', 'role'],
    registers: [registry],
  });
  info.set({ version: packageVersion(), node_version: process.version, role }, 1);
}

import type { Logger } from '../platform/logger.js';
import type { Containment } from '../sandbox/index.js';
import { ChildPool } from './child-pool.js';
import type { WorkerMetrics } from './worker-metrics.js';
import type { CompiledWorkerOptions } from './worker-options.js';

/** The child's environment: enough to run node and a code runner, nothing of the worker's secrets. */
function childEnv(): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'NODE_ENV', 'LOG_LEVEL', 'TZ'];
  return Object.fromEntries(keep.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]]));
}

/**
 * The worker's pool of rollout children, from its options: child logs go to `logger` (marked
 * `source: 'rollout'`), child events to `metrics`. No child is forked until `warm` or a rollout.
 */
export function workerChildPool(options: CompiledWorkerOptions, logger: Logger, metrics: WorkerMetrics, containment: Containment): ChildPool {
  return new ChildPool({
    allow: options.allowlist,
    maxOutputBytes: options.maxOutputBytes,
    execArgv: options.childExecArgv,
    env: childEnv(),
    startTimeoutMs: options.childStartTimeoutMs,
    maxRolloutsPerChild: options.maxRolloutsPerChild,
    maxChildRssMb: options.maxChildRssMb,
    children: options.children,
    blockedLoopMs: options.blockedLoopMs,
    // Never fewer than the warm children: trimming one would fork its replacement at once.
    maxIdle: Math.max(options.concurrency + options.evalConcurrency, options.children),
    onLog: (msg) => logger[msg.level]({ ...msg.obj, source: 'rollout' }, msg.msg ?? ''),
    containment,
    onChildEvent: (event) => metrics.child(event),
    onWarmError: (err) => logger.warn({ err: (err as Error).message }, 'a warm rollout child failed to start; the next rollout forks its own'),
  });
}

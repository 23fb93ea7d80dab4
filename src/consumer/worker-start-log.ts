import type { Logger } from '../platform/logger.js';
import { gapsText, launcherName, type Containment } from '../sandbox/index.js';
import type { CompiledWorkerOptions } from './worker-options.js';

/**
 * Logs what a starting worker runs with: one line with its settings and containment (a warn
 * when the Ref allowlist is widened beyond the built-ins or a containment boundary is open, so
 * neither is missed: a fresh user saw 8 of 9 boundaries open, network included, at info), and a warn
 * when it runs as PID 1 without an init (orphans of crashed rollout children would stay zombies).
 */
export function logWorkerStart(logger: Logger, options: CompiledWorkerOptions, containment: Containment, address: string): void {
  const widened = options.allow.length > 0;
  (widened || containment.gaps.length > 0 ? logger.warn.bind(logger) : logger.info.bind(logger))(
    {
      redis: address,
      allowlist: options.allowlist,
      widened,
      concurrency: options.concurrency,
      children: options.children,
      lockDurationMs: options.lockDurationMs,
      stalledIntervalMs: options.stalledIntervalMs,
      containment: containment.level,
      launcher: launcherName(containment),
      containmentGaps: containment.gaps,
      allowNetwork: containment.allowNetwork,
      exposeReadOnly: options.exposeReadOnly,
      labels: options.labels,
      evalConcurrency: options.evalConcurrency,
    },
    `${widened ? `worker starting; Ref allowlist WIDENED beyond built-ins: ${options.allow.join(', ')}` : 'worker starting'}; containment ${containment.level} (launcher ${launcherName(containment)})` +
      `; ${gapsText(containment.gaps)}` +
      (containment.allowNetwork ? '; the host network is granted to specs that ask for it (--allow-network)' : ''),
  );
  if (process.pid === 1) {
    logger.warn(
      containment.pidNamespace
        ? 'worker runs as PID 1 without an init: rollout children get PID namespaces of their own so nothing is re-parented here; still, prefer an init (tini, docker run --init, compose init: true)'
        : 'worker runs as PID 1 without an init and without PID namespaces: processes orphaned by a crashed rollout child stay zombies here; run the worker under an init (tini, docker run --init, compose init: true)',
    );
  }
}

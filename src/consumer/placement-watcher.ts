import type { Redis } from 'ioredis';
import { parsePlacementEntry, satisfiesPlacement, type LeaseClass, type PlacementLabels, type QueueKeys } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';

/**
 * Discovers the placement queues a worker may serve: polls `keys.placements()` (queue name →
 * labels and class, added by producers before they enqueue there) every `pollMs` and calls
 * `serve(queueName, class)` once for each queue whose labels `workerLabels` satisfy. Polling (not
 * pub/sub): a worker started after the announcement, or reconnecting, still finds every queue.
 */
export class PlacementWatcher {
  private readonly served = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
    private readonly workerLabels: PlacementLabels,
    private readonly pollMs: number,
    private readonly serve: (queueName: string, leaseClass: LeaseClass) => void,
    private readonly logger: Logger,
  ) {}

  /** Polls now, then every `pollMs` until {@link stop}. */
  start(): Promise<void> {
    const first = this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    return first;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private poll(): Promise<void> {
    this.running ??= (async () => {
      try {
        const entries = await this.redis.hgetall(this.keys.placements());
        for (const [name, json] of Object.entries(entries)) {
          if (this.served.has(name)) continue;
          const entry = parsePlacementEntry(json);
          if (!entry || !satisfiesPlacement(this.workerLabels, entry.labels)) continue;
          this.served.add(name);
          this.logger.info({ placementQueue: name, labels: entry.labels, class: entry.class }, `serving placement queue ${name}`);
          this.serve(name, entry.class);
        }
      } catch (err) {
        this.logger.debug({ err: (err as Error).message }, 'placement discovery failed; retrying on the next poll');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}

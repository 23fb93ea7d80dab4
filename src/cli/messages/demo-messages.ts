/** Texts of `demo`. */
export const DEMO_MSG = {
  demoNoRedis: [
    'the demo needs Redis, and none was found:',
    '  - REDIS_URL is not set,',
    '  - there is no redis-server on PATH (install one: `sudo apt-get install redis-server` or `brew install redis`),',
    '  - no Docker engine answers (with Docker: `docker compose up -d redis`, then REDIS_URL=redis://127.0.0.1:6379).',
  ].join('\n'),
  demoRedis: (source: string, address: string) => `redis: ${address} (${source})`,
  demoContainerFailed: (why: string) => `could not start a Redis container through testcontainers: ${why}`,
  demoWorkers: (count: number, queue: string, logDir: string) => `workers: ${count} process(es) on queue "${queue}" (logs in ${logDir})`,
  demoWorkerExited: (name: string, how: string, log: string, tail: string) =>
    `worker ${name} exited early (${how}); its log is ${log}${tail ? `:\n${tail}` : ''}`,
  demoWorkersNotReady: (ready: number, wanted: number, seconds: number, logDir: string) =>
    `only ${ready} of ${wanted} worker(s) connected within ${seconds} s; see the logs in ${logDir}`,
  demoKeep: (ownRedis: boolean) => `everything stays up (--keep): press Ctrl-C to stop the workers${ownRedis ? ', the dashboard and Redis' : ' and the dashboard'}`,
  demoStopping: (parts: readonly string[]) => `stopping ${parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : parts[0]}…`,
  demoInterrupted: (out: string, ownRedis: boolean) =>
    `interrupted: the demo's run ends here and its other rollouts are not run (its workers${ownRedis ? ' and its Redis' : ''} stop with it); the Results so far are in ${out}`,
  demoQueueRemoved: (queue: string, address: string, ran: boolean) =>
    `removed the demo's queue "${queue}" (its jobs and run records) from Redis at ${address}${ran ? '; its Results are in the results file' : ''}`,
  demoQueueNotRemoved: (keyPrefix: string, address: string, why: string) =>
    `could not remove the demo's queue from Redis at ${address} (${why}); its keys are those named ${keyPrefix}:* (redis-cli --scan --pattern '${keyPrefix}:*' | xargs redis-cli unlink)`,
  localRedisFailed: (why: string) => `could not start redis-server: ${why}`,
} as const;

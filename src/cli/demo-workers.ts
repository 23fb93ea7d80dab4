import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CliError } from './errors.js';
import { MSG } from './messages.js';
import { dyingWithThisProcess } from './parent-death.js';
import { binPath } from './paths.js';
import { readStatus, type RolloutQueue } from './plane.js';

/** Options of {@link spawnDemoWorkers}. */
export interface DemoWorkerOptions {
  readonly count: number;
  readonly queue: string;
  readonly redisUrl: string;
  readonly prefix: string;
  readonly concurrency: number;
  /** Directory for one log file per worker. */
  readonly logDir: string;
}

/** Worker processes started by the demo. */
export interface DemoWorkers {
  readonly names: readonly string[];
  readonly logDir: string;
  /**
   * Waits until every worker is connected to the queue (as `status` sees it), at most
   * `timeoutMs`; returns how many are. Fails at once when a worker process exits.
   * @throws CliError naming the worker, how it exited and the tail of its log.
   */
  waitReady(queue: RolloutQueue, timeoutMs: number): Promise<number>;
  /** SIGTERM (graceful shutdown), SIGKILL after `graceMs`; resolves when all have exited. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILLs every worker at once, synchronously (second Ctrl-C). */
  kill(): void;
}

/** Seconds a demo worker may take for a graceful shutdown before it hands rollouts back. */
const DEMO_SHUTDOWN_GRACE_MS = 5000;

const alive = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/**
 * Starts `count` real worker processes (`node bin/rollout-queue.js worker …`), each with
 * `REDIS_URL` and the prefix in its environment, logging to `<logDir>/<name>.log`. Each runs
 * in its own process group, so a terminal Ctrl-C reaches the demo only, which then stops them
 * while Redis is still up; each gets SIGTERM should the demo die first (see dyingWithThisProcess).
 */
export function spawnDemoWorkers(options: DemoWorkerOptions): DemoWorkers {
  mkdirSync(options.logDir, { recursive: true });
  const names = Array.from({ length: options.count }, (_, index) => `demo-worker-${index + 1}`);
  const logs = names.map((name) => path.join(options.logDir, `${name}.log`));
  const children = names.map((name, index) => {
    const fd = openSync(logs[index] as string, 'a');
    try {
      const args = [binPath(), 'worker', '--queue', options.queue, '--concurrency', String(options.concurrency), '--name', name, '--shutdown-grace-ms', String(DEMO_SHUTDOWN_GRACE_MS)];
      const env = { ...process.env, REDIS_URL: options.redisUrl, ROLLOUT_QUEUE_PREFIX: options.prefix, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' };
      const [program, ...argv] = dyingWithThisProcess([process.execPath, ...args]) as [string, ...string[]];
      const child = spawn(program, argv, { env, stdio: ['ignore', fd, fd], detached: true });
      child.once('error', () => {});
      return child;
    } finally {
      closeSync(fd);
    }
  });
  const exitedEarly = (): CliError | undefined => {
    const index = children.findIndex((child) => !alive(child));
    if (index < 0) return undefined;
    const child = children[index] as ChildProcess;
    const log = logs[index] as string;
    return new CliError(MSG.demoWorkerExited(names[index] as string, child.signalCode ?? `exit code ${child.exitCode}`, log, tail(log)));
  };
  return {
    names,
    logDir: options.logDir,
    async waitReady(queue, timeoutMs) {
      const until = Date.now() + timeoutMs;
      let ready = 0;
      for (;;) {
        const failed = exitedEarly();
        if (failed) throw failed;
        ready = (await readStatus(queue)).workers.length;
        if (ready >= options.count || Date.now() > until) return ready;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async stop(graceMs = DEMO_SHUTDOWN_GRACE_MS + 10_000) {
      await Promise.all(children.map((child) => stopChild(child, graceMs)));
    },
    kill() {
      for (const child of children) if (alive(child)) child.kill('SIGKILL');
    },
  };
}

async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (!alive(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-8).join('\n');
  } catch {
    return '';
  }
}

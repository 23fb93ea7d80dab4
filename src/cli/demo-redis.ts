import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { CliError, UsageError } from './errors.js';
import { findRedisServer, startLocalRedis } from './local-redis.js';
import { MSG } from './messages.js';

/** The Redis a demo runs against, and how to let go of it. */
export interface DemoRedis {
  readonly url: string;
  /** `REDIS_URL`, a private `redis-server`, or a testcontainers container. */
  readonly source: 'REDIS_URL' | 'private redis-server' | 'container';
  /** Stops what the demo started (no-op for REDIS_URL). */
  stop(): Promise<void>;
  /** Kills what the demo started at once, synchronously (second Ctrl-C). */
  kill(): void;
}

const pexecFile = promisify(execFile);

async function dockerAnswers(): Promise<boolean> {
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    await pexecFile('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Picks the demo's Redis: `REDIS_URL` when set; else a private `redis-server` from PATH on a
 * free loopback port; else, when a Docker engine answers, a Redis container through
 * testcontainers (a devDependency, imported only here and only then).
 * @throws UsageError (exit 2) saying how to get Redis when none of these exists.
 */
export async function provideDemoRedis(env: NodeJS.ProcessEnv = process.env): Promise<DemoRedis> {
  if (env.REDIS_URL && env.REDIS_URL.trim() !== '') {
    return { url: env.REDIS_URL.trim(), source: 'REDIS_URL', stop: async () => {}, kill: () => {} };
  }
  const binary = findRedisServer(env.PATH);
  if (binary) {
    try {
      const local = await startLocalRedis(binary);
      return { url: local.url, source: 'private redis-server', stop: local.stop, kill: local.kill };
    } catch (err) {
      throw new CliError(MSG.localRedisFailed((err as Error).message));
    }
  }
  if (await dockerAnswers()) return startContainer();
  throw new UsageError(MSG.demoNoRedis);
}

async function startContainer(): Promise<DemoRedis> {
  try {
    const { GenericContainer } = await import('testcontainers');
    const container = await new GenericContainer('redis:7-alpine')
      .withCommand(['redis-server', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'])
      .withExposedPorts(6379)
      .start();
    return {
      url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`,
      source: 'container',
      stop: async () => void (await container.stop()),
      kill: () => {},
    };
  } catch (err) {
    throw new CliError(MSG.demoContainerFailed((err as Error).message));
  }
}

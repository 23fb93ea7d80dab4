import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { serverProcessId } from '../../src/cli/local-redis.js';

const pexecFile = promisify(execFile);

/** A Redis server for a test: its URL, and how to stop, kill or restart it. */
export interface TestRedis {
  readonly url: string;
  /** Where it came from: `env` (REDIS_URL), `container` (testcontainers) or `private` (own redis-server). */
  readonly source: 'env' | 'container' | 'private';
  /** Stops it for good and removes its data (no-op for `env`). */
  stop(): Promise<void>;
  /** SIGKILLs the server process (private only), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and dir after stop/kill (private only). AOF data is reloaded. */
  restart(): Promise<void>;
  /**
   * SIGSTOPs the server process (private only): its connections stay open and nothing answers,
   * as in a partition that drops packets or a stuck VM. {@link thaw} (SIGCONT) wakes it.
   */
  freeze?(): void;
  /** SIGCONTs a frozen server (private only). */
  thaw?(): void;
}

/** Options of {@link startRedis}. */
export interface StartRedisOptions {
  /** Always start a private redis-server (tests that kill or restart Redis). */
  readonly private?: boolean;
  /** AOF fsync policy of a private server; `undefined` turns AOF off. */
  readonly appendfsync?: 'always' | 'everysec' | 'no';
  /** Extra `redis-server` arguments, e.g. ['--requirepass', 'x']. */
  readonly args?: readonly string[];
}

/** A free TCP port on 127.0.0.1, picked by the kernel. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function dockerAnswers(): Promise<boolean> {
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    await pexecFile('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 3000 });
    return true;
  } catch {
    return false;
  }
}

async function waitForPing(url: string, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (err) {
      if (Date.now() > until) throw new Error(`redis at ${url} did not answer within ${deadlineMs} ms: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      client.disconnect();
    }
  }
}

/** Raised when the server answering on our port is not the one we started. */
class ForeignServerError extends Error {}

/**
 * Test files run in parallel, each with its own server: a port picked free may be taken by
 * another file's server before ours binds it (ours then exits on EADDRINUSE), and the ping
 * would be answered by that one, which its file flushes, kills and restarts. So the server
 * that answers must be our process (`INFO server` process_id).
 */
async function checkOwnServer(url: string, proc: ChildProcess | undefined): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    const pid = serverProcessId(await client.info('server'));
    if (pid !== proc?.pid) throw new ForeignServerError(`another redis-server (pid ${pid}) answers on ${url}, not ours (pid ${proc?.pid})`);
  } finally {
    client.disconnect();
  }
}

async function startPrivate(options: StartRedisOptions): Promise<TestRedis> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-redis-'));
  let port = await freePort();
  let url = `redis://127.0.0.1:${port}`;
  let proc: ChildProcess | undefined;
  const args = (): string[] => [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    '--maxmemory-policy', 'noeviction',
    ...(options.appendfsync ? ['--appendonly', 'yes', '--appendfsync', options.appendfsync] : ['--appendonly', 'no']),
    ...(options.args ?? []),
  ];
  const launch = async (): Promise<void> => {
    proc = spawn('redis-server', args(), { stdio: 'ignore' });
    proc.once('error', () => {});
    const authed = url.replace('redis://', `redis://${passwordPart(options)}`);
    await waitForPing(authed, 10_000);
    await checkOwnServer(authed, proc);
  };
  // A restart must come back on the same port (the tests' URL), so only the first launch moves.
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (err) {
      proc?.kill('SIGKILL');
      if (!(err instanceof ForeignServerError) || attempt >= 5) throw err;
      port = await freePort();
      url = `redis://127.0.0.1:${port}`;
    }
  }
  const exited = (): Promise<void> =>
    new Promise((resolve) => {
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
    });
  return {
    url,
    source: 'private',
    async stop() {
      proc?.kill('SIGTERM');
      await exited();
      await rm(dir, { recursive: true, force: true });
    },
    async kill() {
      proc?.kill('SIGKILL');
      await exited();
    },
    async restart() {
      await launch();
    },
    freeze() {
      proc?.kill('SIGSTOP');
    },
    thaw() {
      proc?.kill('SIGCONT');
    },
  };
}

function passwordPart(options: StartRedisOptions): string {
  const args = options.args ?? [];
  const at = args.indexOf('--requirepass');
  return at >= 0 && args[at + 1] ? `:${encodeURIComponent(args[at + 1] as string)}@` : '';
}

/**
 * A Redis for one test file, picked in this order: `REDIS_URL`; a testcontainers Redis when
 * a Docker engine answers; a private `redis-server` from PATH on a free loopback port in a
 * temp dir. `private: true` skips the first two (for tests that kill or restart Redis).
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const wantsPrivate = options.private || options.appendfsync !== undefined || options.args !== undefined;
  if (!wantsPrivate && process.env.REDIS_URL) {
    const url = process.env.REDIS_URL;
    const noop = async (): Promise<void> => {};
    const refuse = async (): Promise<void> => {
      throw new Error('cannot kill or restart a REDIS_URL server; start it with { private: true }');
    };
    return { url, source: 'env', stop: noop, kill: refuse, restart: refuse };
  }
  if (!wantsPrivate && (await dockerAnswers())) {
    const { GenericContainer } = await import('testcontainers');
    const container = await new GenericContainer('redis:7-alpine')
      .withCommand(['redis-server', '--maxmemory-policy', 'noeviction'])
      .withExposedPorts(6379)
      .start();
    const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
    return {
      url,
      source: 'container',
      stop: async () => void (await container.stop()),
      kill: async () => void (await container.stop({ timeout: 0 })),
      restart: async () => void (await container.restart()),
    };
  }
  return startPrivate(options);
}

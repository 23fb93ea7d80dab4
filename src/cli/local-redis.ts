import { redisTimeoutOptions } from '../platform/redis-timeout.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { dyingWithThisProcess } from './parent-death.js';

/** A private redis-server started by the CLI. */
export interface LocalRedis {
  readonly url: string;
  /** Stops the server (SIGTERM, SIGKILL after 5 s) and removes its directory. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILLs the server at once, synchronously (for a second Ctrl-C); leaves its temp dir. */
  kill(): void;
}

/** The path of `redis-server` on PATH, or undefined. */
export function findRedisServer(envPath: string = process.env.PATH ?? ''): string | undefined {
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'redis-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A free TCP port on 127.0.0.1, picked by the kernel. */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

/**
 * Starts `redis-server` on a free loopback port in a fresh temp directory: persistence off
 * (`--save ''`, `--appendonly no`: demo data is throwaway) and `--maxmemory-policy noeviction`
 * (BullMQ needs its keys never evicted). Retries on another port if the port was taken
 * between picking and binding.
 * @throws Error with the server's last output when it does not answer within 10 s.
 */
export async function startLocalRedis(binary: string = findRedisServer() ?? 'redis-server'): Promise<LocalRedis> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'rollout-queue-redis-'));
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freeLoopbackPort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'];
    // Own process group: a terminal Ctrl-C reaches the CLI only, which stops things in order.
    // SIGTERM should the CLI die first: nothing else would ever stop this server.
    const [program, ...argv] = dyingWithThisProcess([binary, ...args]) as [string, ...string[]];
    const child = spawn(program, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    const keep = (chunk: Buffer): void => void (output = (output + chunk.toString()).slice(-2000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const url = `redis://127.0.0.1:${port}`;
    try {
      await waitUntilAnswers(url, child, 10_000);
      child.stdout?.off('data', keep).resume();
      child.stderr?.off('data', keep).resume();
      return { url, stop: once(() => stopServer(child, dir)), kill: () => void child.kill('SIGKILL') };
    } catch (err) {
      child.kill('SIGKILL');
      lastError = new Error(`${(err as Error).message}${output ? `; redis-server said: ${output.trim().split('\n').slice(-3).join(' | ')}` : ''}`);
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError ?? new Error('redis-server did not start');
}

/**
 * The pid of the redis-server that wrote an `INFO server` reply (its `process_id` field), or
 * undefined when the reply has none. Servers started side by side (test files, demos, benches)
 * can answer on each other's port: who answers is told by this, not by a PING.
 */
export function serverProcessId(infoServer: string): number | undefined {
  const match = /^process_id:(\d+)/m.exec(infoServer);
  return match ? Number(match[1]) : undefined;
}

async function waitUntilAnswers(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let exited: string | undefined;
  child.once('exit', (code, signal) => void (exited = `exited with ${signal ?? `code ${code}`}`));
  child.once('error', (err) => void (exited = err.message));
  for (;;) {
    if (exited) throw new Error(`redis-server ${exited}`);
    // A short connect (the loop retries); the command bounded like every client's (redis-timeout.ts).
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...redisTimeoutOptions('command'), connectTimeout: 1000 });
    client.on('error', () => {});
    let answeringPid: number | undefined;
    try {
      await client.connect();
      answeringPid = serverProcessId(await client.info('server'));
    } catch {
      if (Date.now() > until) throw new Error(`redis-server did not answer on ${url} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    } finally {
      client.disconnect();
    }
    if (answeringPid === child.pid) return;
    // Another redis-server took the port between picking and binding (ours then exits on
    // EADDRINUSE): never hand out someone else's server, which its owner may flush or stop.
    throw new Error(`another redis-server (pid ${answeringPid}) answers on ${url}`);
  }
}

async function stopServer(child: ChildProcess, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  await rm(dir, { recursive: true, force: true });
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn());
}

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { serverProcessId } from '../../src/cli/local-redis.js';
import { freePort } from './redis.js';

/** One redis-server (or sentinel) process of a test topology. */
export interface TopologyNode {
  readonly port: number;
  readonly proc: ChildProcess;
  /** SIGKILLs it and waits for the exit, as a crash would. */
  kill(): Promise<void>;
}

/** Polls `check` every 50 ms until it is true, failing after `timeoutMs` with `what`. */
async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Sends one command to 127.0.0.1:port with no retries; rejects when nothing answers. */
async function ask(port: number, ...command: [string, ...string[]]): Promise<unknown> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.call(...command);
  } finally {
    client.disconnect();
  }
}

async function launch(args: readonly string[], port: number, dir: string): Promise<TopologyNode> {
  const proc = spawn('redis-server', [...args], { cwd: dir, stdio: 'ignore' });
  proc.once('error', () => {});
  await until(async () => (await ask(port, 'PING')) === 'PONG', 10_000, `redis-server on port ${port} answering`);
  // Another test file's server may have taken the port first (ours then exits on EADDRINUSE):
  // never run a topology, and kill its "primary", on a server that is not ours (see redis.ts).
  const pid = serverProcessId(String(await ask(port, 'INFO', 'server')));
  if (pid !== proc.pid) {
    proc.kill('SIGKILL');
    throw new Error(`another redis-server (pid ${pid}) answers on port ${port}, not ours (pid ${proc.pid}); run again`);
  }
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    port,
    proc,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

const BASE_ARGS = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'];

/** A local Redis Cluster of `masters` primaries (no replicas) on free loopback ports. */
export interface TestCluster {
  readonly nodes: readonly TopologyNode[];
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…` */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts `masters` `redis-server --cluster-enabled yes` processes, joins them with
 * `redis-cli --cluster create … --cluster-yes` (slots split evenly) and waits until every node
 * reports `cluster_state:ok`.
 */
export async function startCluster(masters = 3): Promise<TestCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-cluster-'));
  const nodes: TopologyNode[] = [];
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      nodes.push(await launch(['--port', String(port), ...BASE_ARGS, '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--dir', dir], port, dir));
    }
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 30_000 });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    for (const node of nodes) {
      await until(async () => /cluster_state:ok/.test(String(await ask(node.port, 'CLUSTER', 'INFO'))), 20_000, `cluster_state:ok on ${node.port}`);
    }
  } catch (err) {
    await Promise.all(nodes.map((node) => node.kill()));
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    nodes,
    url: `redis+cluster://${nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}`,
    async stop() {
      await Promise.all(nodes.map((node) => node.kill()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A primary, one replica and one sentinel (quorum 1) watching them, on free loopback ports. */
export interface TestSentinel {
  readonly primary: TopologyNode;
  readonly replica: TopologyNode;
  readonly sentinel: TopologyNode;
  /** Name of the monitored primary. */
  readonly name: string;
  /** `redis+sentinel://127.0.0.1:<sentinel>/<name>` */
  readonly url: string;
  /** Port of the primary the sentinel reports now. */
  currentPrimaryPort(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts a primary, a replica of it, and `redis-server --sentinel` monitoring the primary with
 * `down-after-milliseconds 1000` and `failover-timeout 5000`, so a SIGKILLed primary is replaced
 * by the replica within a few seconds. Waits until the replica is in sync and the sentinel sees it.
 */
export async function startSentinel(): Promise<TestSentinel> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'rq-sentinel-'));
  const name = 'rqprimary';
  const started: TopologyNode[] = [];
  try {
    const primaryPort = await freePort();
    const primary = await launch(['--port', String(primaryPort), ...BASE_ARGS, '--dir', dir, '--dbfilename', `p-${primaryPort}.rdb`], primaryPort, dir);
    started.push(primary);
    const replicaPort = await freePort();
    const replica = await launch(['--port', String(replicaPort), ...BASE_ARGS, '--dir', dir, '--dbfilename', `r-${replicaPort}.rdb`, '--replicaof', '127.0.0.1', String(primaryPort)], replicaPort, dir);
    started.push(replica);
    await until(async () => /master_link_status:up/.test(String(await ask(replicaPort, 'INFO', 'replication'))), 20_000, 'replica in sync');
    const sentinelPort = await freePort();
    const conf = path.join(dir, `sentinel-${sentinelPort}.conf`);
    await writeFile(conf, [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 1`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 5000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n'));
    const sentinel = await launch([conf, '--sentinel'], sentinelPort, dir);
    started.push(sentinel);
    await until(async () => {
      const replicas = (await ask(sentinelPort, 'SENTINEL', 'REPLICAS', name)) as unknown[];
      return Array.isArray(replicas) && replicas.length === 1;
    }, 20_000, 'sentinel seeing the replica');
    return {
      primary,
      replica,
      sentinel,
      name,
      url: `redis+sentinel://127.0.0.1:${sentinelPort}/${name}`,
      async currentPrimaryPort() {
        const [, port] = (await ask(sentinelPort, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string];
        return Number(port);
      },
      async stop() {
        await Promise.all(started.map((node) => node.kill()));
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await Promise.all(started.map((node) => node.kill()));
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

import { spawn } from 'node:child_process';
import { REPO_ROOT, startCli, type CliProcess } from '../integration/cli/cli-process.js';
import { RawQueue, TEST_PREFIX } from './raw-queue.js';
import { startRedis, type TestRedis } from './redis.js';
import { waitFor } from './wait-for.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';

/**
 * Starts `rollout-queue gateway --port 0 …args` as a real process and waits for the URL it
 * prints. (test/integration/gateway/python-client.test.ts starts its own the same way.)
 * @throws Error with the gateway's stderr when it exits before listening.
 */
export async function startGatewayCli(args: readonly string[], env: Record<string, string>): Promise<{ gateway: CliProcess; url: string }> {
  const gateway = startCli(['gateway', '--port', '0', ...args], { env });
  await waitFor(() => {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited early:\n${gateway.stderr()}`);
    return /gateway: http:\/\/\S+/.test(gateway.stdout());
  }, 'the gateway to listen', 20_000);
  return { gateway, url: (/gateway: (http:\/\/127\.0\.0\.1:\d+)/.exec(gateway.stdout()) as RegExpExecArray)[1] as string };
}

/** Runs a python3 script from the repository root; its stdout is one JSON object per line. */
export function runPythonChecks(script: string, args: readonly string[]): Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', [script, ...args], { cwd: REPO_ROOT, env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.once('close', (code) => resolve({ code, stderr, lines: stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) }));
  });
}

/** What a gateway test runs against: its own Redis, a raw queue, one worker process, the gateway. */
export interface GatewayStack {
  readonly redis: TestRedis;
  readonly q: RawQueue;
  readonly worker: WorkerProcess;
  readonly gateway: CliProcess;
  readonly url: string;
}

/**
 * Starts a private Redis, a worker process (concurrency 2, `workerEnv` added) and
 * `rollout-queue gateway --queue <q> …gatewayArgs` on it, in that order.
 */
export async function startGatewayStack(gatewayArgs: readonly string[], gatewayEnv: Record<string, string> = {}, workerEnv: Record<string, string> = {}): Promise<GatewayStack> {
  const redis = await startRedis();
  const q = new RawQueue(redis.url);
  const worker = await startWorkerProcess(q.workerOptions({ concurrency: 2 }), workerEnv);
  const { gateway, url } = await startGatewayCli(['--queue', q.name, ...gatewayArgs], { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX, ...gatewayEnv });
  return { redis, q, worker, gateway, url };
}

/** Stops what {@link startGatewayStack} started, gateway first (its calls end before the worker goes). */
export async function stopGatewayStack(stack: Partial<GatewayStack> | undefined): Promise<void> {
  stack?.gateway?.child.kill('SIGTERM');
  await stack?.gateway?.done;
  stack?.worker?.signal('SIGTERM');
  await stack?.worker?.exited();
  await stack?.q?.close();
  await stack?.redis?.stop();
}

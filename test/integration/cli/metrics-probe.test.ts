import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, REPO_ROOT, startCli, uniquePrefix, waitFor } from './cli-process.js';

// docs/operations.md's Kubernetes probe recipe, run against the real CLI: the container's args
// are the worker's command line, and the probe's path answers on the port they name. Tests stay
// on loopback, so the recipe's 0.0.0.0 becomes 127.0.0.1 and its port a free one; every flag and
// the probe path are the page's.
const PAGE = readFileSync(path.join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

function recipe(): { args: string[]; probePath: string; port: number } {
  const at = PAGE.indexOf('<!-- doc-example: k8s-probe');
  expect(at).toBeGreaterThanOrEqual(0);
  const block = /```yaml\n([\s\S]*?)```/.exec(PAGE.slice(at))?.[1] ?? '';
  const [container] = (parse(block) as { containers: Array<{ args: string[]; ports: Array<{ name: string; containerPort: number }>; livenessProbe: { httpGet: { path: string; port: string } } }> }).containers;
  if (!container) throw new Error('docs/operations.md k8s-probe block has no container');
  const named = container.ports.find((port) => port.name === container.livenessProbe.httpGet.port);
  return { args: container.args, probePath: container.livenessProbe.httpGet.path, port: named?.containerPort ?? Number.NaN };
}

describe('docs/operations.md Kubernetes probe recipe', () => {
  it('the CLI accepts the container args and /healthz answers 200 on the port they name', async () => {
    const { args, probePath, port } = recipe();
    expect(args[0]).toBe('rollout-queue');
    const portAt = args.indexOf('--metrics-port');
    const hostAt = args.indexOf('--metrics-host');
    expect(Number(args[portAt + 1])).toBe(port);
    expect(args[hostAt + 1]).toBe('0.0.0.0');
    const local = await freePort();
    const cliArgs = args.slice(1).map((arg, i) => (i + 1 === portAt + 1 ? String(local) : i + 1 === hostAt + 1 ? '127.0.0.1' : arg));
    const worker = startCli(cliArgs, { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('probe') } });
    try {
      let status = 0;
      await waitFor(async () => {
        if (worker.child.exitCode !== null) throw new Error(`worker exited ${worker.child.exitCode}: ${worker.stderr()}${worker.stdout()}`);
        status = await fetch(`http://127.0.0.1:${local}${probePath}`).then((res) => res.status, () => 0);
        return status === 200;
      }, 30_000, 'the probe to answer 200');
      const metrics = await (await fetch(`http://127.0.0.1:${local}/metrics`)).text();
      expect(metrics).toContain('rollout_queue_worker_slots 2');
    } finally {
      worker.child.kill('SIGTERM');
      const end = await worker.done;
      expect(end.code, end.stderr).toBe(0);
    }
  });
});

import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { runPythonChecks, startGatewayCli } from '../../helpers/gateway-cli.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { REPO_ROOT, type CliProcess } from '../cli/cli-process.js';

// Issue 28 item 1 through the any-language edge: a gateway (`--gold-key`) and the Python client
// (`map_rollouts(gold_keys=...)`) against real worker processes. The runs API's Results carry
// goldVisibleToRun; a Dispatch's scenario lacks the gateway's gold keys.
let redis: TestRedis;
let q: RawQueue;
let worker: WorkerProcess;
let gateway: CliProcess;
let url: string;

beforeAll(async () => {
  redis = await startRedis();
  q = new RawQueue(redis.url);
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 2 }));
  ({ gateway, url } = await startGatewayCli(['--queue', q.name, '--dispatch', 'rq-fixtures/dispatches:noop', '--gold-key', 'expected', '--no-auth'], {
    REDIS_URL: redis.url,
    ROLLOUT_QUEUE_PREFIX: TEST_PREFIX,
  }));
});
afterAll(async () => {
  gateway?.child.kill('SIGTERM');
  await gateway?.done;
  worker?.signal('SIGTERM');
  await worker?.exited();
  await q?.close();
  await redis.stop();
});

describe('the gold through the gateway and the Python client', () => {
  it("map_rollouts(gold_keys=...) and the reward's goldKey keep keys from the run; goldVisibleToRun reaches the Python Result; the dispatch scenario lacks --gold-key", async () => {
    const { code, lines, stderr } = await runPythonChecks(path.join(REPO_ROOT, 'test', 'fixtures', 'python', 'gold_checks.py'), [url]);
    expect(code, stderr).toBe(0);
    const by = new Map(lines.map((line) => [line.check as string, line]));
    expect(by.get('kept')).toEqual({ check: 'kept', kind: 'ok', taskKeys: ['question', 'id'], goldKeys: ['answer', 'notes'], goldVisibleToRun: false });
    expect(by.get('shown')).toEqual({ check: 'shown', kind: 'ok', taskKeys: ['question', 'answer', 'notes', 'id'], goldKeys: [], goldVisibleToRun: true });
    expect(by.get('dispatch')).toEqual({ check: 'dispatch', artifact: { prompt: 'two plus two' } });
  });
});

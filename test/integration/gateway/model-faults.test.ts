import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { runPythonChecks, startGatewayCli } from '../../helpers/gateway-cli.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { REPO_ROOT, type CliProcess } from '../cli/cli-process.js';

// Fresh-user report, exact input, through the Python client and the gateway (which always stops a
// run on a caller Result): draft 2 of 6 with rendered.files "../evil.py" ended caller and stopped
// the run. A bad file inside rendered.files is the model's: model, BadRenderedFile, the run goes on.
let redis: TestRedis;
let q: RawQueue;
let worker: WorkerProcess;
let gateway: CliProcess;
let url: string;

beforeAll(async () => {
  redis = await startRedis();
  q = new RawQueue(redis.url);
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 2 }));
  ({ gateway, url } = await startGatewayCli(['--queue', q.name, '--no-auth'], { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX }));
});
afterAll(async () => {
  gateway?.child.kill('SIGTERM');
  await gateway?.done;
  worker?.signal('SIGTERM');
  await worker?.exited();
  await q?.close();
  await redis.stop();
});

describe('model-written files through the gateway and the Python client', () => {
  it('"../evil.py", a file that is not text and a missing entrypoint end model/BadRenderedFile; all six drafts get their Result', async () => {
    const { code, lines, stderr } = await runPythonChecks(path.join(REPO_ROOT, 'test', 'fixtures', 'python', 'model_faults_checks.py'), [url]);
    expect(code, stderr).toBe(0);
    const by = Object.fromEntries(lines.map((line) => [line.task as string, line]));
    expect(by).toEqual({
      d1: { task: 'd1', kind: 'ok', reward: 1, error: null },
      d2: { task: 'd2', kind: 'model', reward: null, error: 'BadRenderedFile' },
      d3: { task: 'd3', kind: 'model', reward: null, error: 'BadRenderedFile' },
      d4: { task: 'd4', kind: 'model', reward: null, error: 'BadRenderedFile' },
      d5: { task: 'd5', kind: 'ok', reward: 1, error: null },
      d6: { task: 'd6', kind: 'ok', reward: 1, error: null },
    });
  });
});

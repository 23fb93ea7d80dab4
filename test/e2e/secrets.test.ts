import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolloutQueue } from '../../src/producer/index.js';
import { createLogger } from '../../src/platform/logger.js';
import type { Result } from '../../src/spec/index.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { fixture, RawQueue, TEST_PREFIX } from '../helpers/raw-queue.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

// A secret reaches rollout code by name only: the value lives in the worker's environment,
// never in a spec, a Result or a log line; the code runner's child sees only named variables.
const SECRET_NAME = 'RQ_E2E_API_KEY';
const SECRET_VALUE = 'sk-e2e-Zq81kd93jdlqpw02';
const UNNAMED_VALUE = 'unnamed-worker-secret-77xq';

let redis: TestRedis;
let raw: RawQueue;
let worker: WorkerProcess;
let rq: RolloutQueue;
const coordinatorLog: string[] = [];

beforeAll(async () => {
  redis = await startRedis();
  raw = new RawQueue(redis.url);
  worker = await startWorkerProcess(raw.workerOptions({ concurrency: 2 }), { [SECRET_NAME]: SECRET_VALUE, RQ_E2E_OTHER_TOKEN: UNNAMED_VALUE, LOG_LEVEL: 'debug' });
  rq = await RolloutQueue.create({
    redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 300,
    logger: createLogger({}, { write: (line: string) => void coordinatorLog.push(line) }),
  });
});

afterAll(async () => {
  await rq.close();
  worker.signal('SIGTERM');
  await worker.exited();
  await raw.close();
  await redis.stop();
});

async function collect(iterable: AsyncIterable<Result>): Promise<Result[]> {
  const results: Result[] = [];
  for await (const result of iterable) results.push(result);
  return results;
}

describe('secrets by name, end to end', () => {
  it('the code runner child sees only PATH/HOME/LANG/TMPDIR (and PWD) and the named secret; nothing carries the value', async () => {
    const artifact = [
      "const names = Object.keys(process.env).sort();",
      `const secret = process.env.${SECRET_NAME} ?? '';`,
      "console.log(JSON.stringify({ names, secretLength: secret.length }));",
      "console.log('Answer: 1');",
    ].join('\n');
    const results = await collect(
      rq.mapRollouts(
        [
          {
            rendered: artifact,
            task: { id: 'env', answer: 1 },
            run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', timeoutMs: 10_000 } },
            reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'answer' } },
            sandbox: { env: [SECRET_NAME], memoryMb: 256 },
          },
          { rendered: 'x', task: { id: 'child-env' }, run: fixture('reportsEnv'), reward: fixture('constant'), sandbox: { env: [SECRET_NAME], memoryMb: 256 } },
        ],
        { runId: 'secrets' },
      ),
    );
    const byTask = new Map(results.map((r) => [r.taskId, r]));
    const env = byTask.get('env');
    expect(env).toMatchObject({ kind: 'ok', reward: 1 });
    const printed = JSON.parse(String((env?.output as { stdout: string }).stdout).split('\n')[0] as string) as { names: string[]; secretLength: number };
    expect(printed.secretLength).toBe(SECRET_VALUE.length);
    // PWD: set by bubblewrap in the tenant view (docs/security.md), the program's own work dir.
    expect(printed.names.filter((n) => !['PATH', 'HOME', 'LANG', 'TMPDIR', 'PWD'].includes(n))).toEqual([SECRET_NAME]);
    // The rollout child itself gets the secret through ctx.secrets, not through its environment.
    const childEnv = byTask.get('child-env')?.output as { envNames: string[]; secretNames: string[] };
    expect(childEnv.secretNames).toEqual([SECRET_NAME]);
    expect(childEnv.envNames).not.toContain(SECRET_NAME);
    expect(childEnv.envNames).not.toContain('RQ_E2E_OTHER_TOKEN');
    const everything = [JSON.stringify(results), worker.output(), coordinatorLog.join('')];
    for (const text of everything) {
      expect(text).not.toContain(SECRET_VALUE);
      expect(text).not.toContain(UNNAMED_VALUE);
    }
    const job = await raw.queue.getJob('secrets.env');
    expect(job?.data.sandbox.env).toEqual([SECRET_NAME]);
    expect(JSON.stringify(job?.data)).not.toContain(SECRET_VALUE);
  });

  it('a secret set in the coordinator environment and embedded in a task is refused, naming only the variable', async () => {
    process.env.RQ_E2E_LEAKY_TOKEN = 'leaky-token-value-5521';
    try {
      const results: Result[] = [];
      await expect(async () => {
        for await (const result of rq.mapRollouts([{ rendered: 'x', task: { id: 'leak', note: 'use leaky-token-value-5521 please' }, run: fixture('echo'), reward: fixture('constant') }], { runId: 'leak' })) results.push(result);
      }).rejects.toMatchObject({ name: 'RunStoppedError' });
      expect(results[0]).toMatchObject({ kind: 'caller', error: { type: 'SecretInSpec' } });
      expect(results[0]?.error?.message).toContain('RQ_E2E_LEAKY_TOKEN');
      expect(JSON.stringify(results)).not.toContain('leaky-token-value-5521');
      expect(coordinatorLog.join('')).not.toContain('leaky-token-value-5521');
      expect(await raw.queue.getJob('leak.leak')).toBeUndefined();
    } finally {
      delete process.env.RQ_E2E_LEAKY_TOKEN;
    }
  });
});

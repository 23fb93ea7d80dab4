import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli-process.js';

// Issue 31: a tasks file with three bad lines needed three runs. The real bin, with a Redis
// address nothing answers on: the refusal (exit 2) comes before Redis is touched, so nothing
// can have been enqueued.
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-bad-lines-'));
  await writeFile(path.join(dir, 'solve.py'), 'print(1)\n');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('run with several bad task lines', () => {
  it('names every bad line of every check in one go (JSON, gold answer, spec field), exit 2, before Redis', async () => {
    const tasks = path.join(dir, 'tasks.jsonl');
    await writeFile(tasks, [
      '{"id":"t1","answer":"1"}',
      '{"id":"t2","answer":"2"', // not JSON
      '{"id":"t3"}', // no gold answer
      '{"id":"t4","answer":"4","placement":"eu"}', // placement not an object
      '{"id":"t5","answer":"5"}',
      '{"id":"t6","answer":{"x":1}}', // gold answer an object
    ].join('\n'));
    const outcome = await runCli(
      ['run', '--tasks', tasks, '--artifact', path.join(dir, 'solve.py'), '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:exactMatch'],
      { env: { REDIS_URL: 'redis://127.0.0.1:1' }, cwd: dir },
    );
    expect(outcome.code, outcome.stderr).toBe(2);
    const lines = outcome.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(`error: --tasks ${tasks} has 4 bad lines; nothing was enqueued. Fix them all, then run again:`);
    expect(lines.slice(1).map((line) => /^ {2}\S+:(\d+): /.exec(line)?.[1])).toEqual(['2', '3', '4', '6']);
    expect(lines[1]).toContain('not valid JSON');
    expect(lines[2]).toContain('this task has no "answer"');
    expect(lines[3]).toContain('"placement" must be an object of labels');
    expect(lines[4]).toContain('which holds an object');
    expect(outcome.stderr).not.toContain('could not connect');
  });
});

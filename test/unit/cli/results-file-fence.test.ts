import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResultsFile } from '../../../src/cli/results-file.js';
import type { Result } from '../../../src/spec/index.js';

const result = (leaseId: string): Result => ({
  leaseId, runId: 'r1', taskId: leaseId.slice(3), kind: 'ok', output: null, reward: 1, error: null,
  attempts: 1, redispatched: 0, worker: 'w', queuedMs: 0, runMs: 1, finishedAt: '2026-01-01T00:00:00.000Z', cost: [],
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-results-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

describe('ResultsFile: a lease is written once, whoever else appends to the file', () => {
  it('checks the file itself at append: a line another coordinator appended is not written again', async () => {
    const file = path.join(dir, 'r1.jsonl');
    const a = ResultsFile.open(file, 'r1');
    const b = ResultsFile.open(file, 'r1');
    expect(a.append(result('r1.t0'))).toBe(true);
    expect(b.append(result('r1.t1'))).toBe(true);
    // A was "paused" while B delivered t1 and t2; both are in the file once.
    expect(b.append(result('r1.t2'))).toBe(true);
    expect(a.append(result('r1.t1'))).toBe(false);
    expect(a.append(result('r1.t2'))).toBe(false);
    expect(b.append(result('r1.t0'))).toBe(false);
    a.refresh();
    expect(a.count).toBe(3);
    a.close();
    b.close();
    const ids = (await readFile(file, 'utf8')).trim().split('\n').map((line) => (JSON.parse(line) as Result).leaseId);
    expect(ids).toEqual(['r1.t0', 'r1.t1', 'r1.t2']);
  });
});

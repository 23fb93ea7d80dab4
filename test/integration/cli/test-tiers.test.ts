import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cli-process.js';

// `npm test` is one `vitest run` of the tiers as projects (vitest.config.ts). Run here through
// the real vitest binary with the real config, each tier's files swapped for one fixture that
// logs its tier (test/fixtures/tiers): issue 31, the e2e tier never ran once unit failed (`&&`).
const VITEST = path.join(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const CONFIG = path.join(REPO_ROOT, 'test', 'fixtures', 'tiers', 'vitest.tiers.config.ts');
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-tiers-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `vitest run` with the tiers config; `fail`: the tier whose test fails. */
function runTiers(fail: string): Promise<{ code: number | null; output: string; log: Promise<string> }> {
  const log = path.join(dir, 'tiers.log');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG], {
      cwd: REPO_ROOT,
      env: { ...process.env, RQ_TIERS_LOG: log, RQ_TIERS_FAIL: fail, CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output, log: readFile(log, 'utf8') }));
  });
}

describe('npm test: one vitest run, the tiers as ordered projects', () => {
  it('runs unit, then integration, then e2e; a failing unit tier still lets the others run and report; exit non-zero', async () => {
    const { code, output, log } = await runTiers('unit');
    expect(await log).toBe('unit\nintegration\ne2e\n');
    expect(code).toBe(1);
    expect(output).toMatch(/Test Files {2}1 failed \| 2 passed \(3\)/);
    expect(output).toMatch(/Tests {2}1 failed \| 2 passed \(3\)/);
  });

  it('exits non-zero when only the last tier fails, and 0 when none does', async () => {
    const last = await runTiers('e2e');
    expect(await last.log).toBe('unit\nintegration\ne2e\n');
    expect(last.code).toBe(1);
    const none = await runTiers('none');
    expect(none.code, none.output).toBe(0);
    expect(none.output).toMatch(/Tests {2}3 passed \(3\)/);
  });
});

import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliCommandFor } from '../../../src/cli/cli-command.js';

// Fresh-user report: after Ctrl-C the CLI said "Collect the rest with rollout-queue resume …",
// and in a fresh clone (no npm link) that name is on no PATH, so the pasted hint failed.

const root = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-command-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const clone = path.join(root, 'clone');
mkdirSync(path.join(clone, 'bin'), { recursive: true });
const script = path.join(clone, 'bin', 'rollout-queue.js');
writeFileSync(script, '');
const linked = path.join(root, 'linked-bin');
mkdirSync(linked);
symlinkSync(script, path.join(linked, 'rollout-queue')); // what npm link makes

describe('cliCommandFor: the command a pasted hint runs', () => {
  it('is `node bin/rollout-queue.js` from a clone whose CLI is not on PATH', () => {
    expect(cliCommandFor({ script, pathEnv: '/usr/bin:/bin', cwd: clone })).toBe('node bin/rollout-queue.js');
  });

  it('names the script by its absolute path from a working directory outside the clone', () => {
    const elsewhere = path.join(root, 'elsewhere');
    mkdirSync(elsewhere);
    expect(cliCommandFor({ script, pathEnv: '/usr/bin', cwd: elsewhere })).toBe(`node ${script}`);
  });

  it('is `rollout-queue` once that name on PATH is this script (npm link, an install)', () => {
    expect(cliCommandFor({ script, pathEnv: `/usr/bin:${linked}`, cwd: clone })).toBe('rollout-queue');
  });

  it('is `rollout-queue` when a `rollout-queue` on PATH is another install', () => {
    const other = path.join(root, 'other');
    mkdirSync(path.join(other, 'bin'), { recursive: true });
    writeFileSync(path.join(other, 'bin', 'rollout-queue.js'), '');
    expect(cliCommandFor({ script: path.join(other, 'bin', 'rollout-queue.js'), pathEnv: linked, cwd: other })).toBe('node bin/rollout-queue.js');
  });

  it('is `rollout-queue` when no CLI entry script runs (a test runner, a library host)', () => {
    expect(cliCommandFor({ script: process.argv[1], pathEnv: '', cwd: clone })).toBe('rollout-queue');
    expect(cliCommandFor({ script: undefined, pathEnv: '', cwd: clone })).toBe('rollout-queue');
  });

  it('names the script by its absolute path from a directory above the clone (second fresh-user pass: node /tmp/fresh2/bin/… printed fresh2/bin/…)', () => {
    expect(cliCommandFor({ script, pathEnv: '/usr/bin', cwd: root })).toBe(`node ${script}`);
  });

  it('quotes a path the shell would split', () => {
    const spaced = path.join(root, 'my clone');
    mkdirSync(path.join(spaced, 'bin'), { recursive: true });
    writeFileSync(path.join(spaced, 'bin', 'rollout-queue.js'), '');
    expect(cliCommandFor({ script: path.join(spaced, 'bin', 'rollout-queue.js'), pathEnv: '', cwd: root })).toBe(`node '${path.join(spaced, 'bin', 'rollout-queue.js')}'`);
  });
});

// Fresh-user reports (helpers 26 and 28): with REDIS_URL and ROLLOUT_QUEUE_PREFIX exported in one
// shell, a hint pasted into another (`… worker --queue q`, `… resume r --queue q`) went to
// redis://127.0.0.1:6379 and prefix "rq": a worker served another Redis, a resume found no run.
describe('cliCommandFor: the environment a pasted hint carries', () => {
  const hint = (env: NodeJS.ProcessEnv): string => cliCommandFor({ script, pathEnv: '/usr/bin', cwd: clone, env });

  it('carries REDIS_URL and ROLLOUT_QUEUE_PREFIX when they are not the defaults', () => {
    expect(hint({ REDIS_URL: 'redis://127.0.0.1:17721', ROLLOUT_QUEUE_PREFIX: 'evals' })).toBe('REDIS_URL=redis://127.0.0.1:17721 ROLLOUT_QUEUE_PREFIX=evals node bin/rollout-queue.js');
  });

  it('carries nothing for the defaults, a blank REDIS_URL or an empty prefix', () => {
    expect(hint({ REDIS_URL: 'redis://127.0.0.1:6379', ROLLOUT_QUEUE_PREFIX: 'rq' })).toBe('node bin/rollout-queue.js');
    expect(hint({ REDIS_URL: '  ', ROLLOUT_QUEUE_PREFIX: '' })).toBe('node bin/rollout-queue.js');
    expect(hint({})).toBe('node bin/rollout-queue.js');
  });

  it('never prints the password of REDIS_URL: *** stands for it', () => {
    const text = hint({ REDIS_URL: 'redis://worker:s3cr3t-value@redis.internal:6380/2' });
    expect(text).toBe('REDIS_URL=\'redis://worker:***@redis.internal:6380/2\' node bin/rollout-queue.js');
    expect(text).not.toContain('s3cr3t-value');
  });

  it('quotes a value the shell would split', () => {
    expect(hint({ ROLLOUT_QUEUE_PREFIX: '{team a}' })).toBe("ROLLOUT_QUEUE_PREFIX='{team a}' node bin/rollout-queue.js");
  });
});

import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CallerError, InfrastructureError, ModelError, brandedKind, redactSecretsDeep } from '../../../src/spec/index.js';
import { codeRunner } from '../../../src/runners/index.js';
import { currentContainment } from '../../../src/sandbox/index.js';
import { fakeContext } from './fake-context.js';

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const settled = await promise.then(
    () => ({ ok: true as const }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  if (settled.ok) throw new Error('expected a rejection');
  return settled.err as Error;
}

const task = { id: 'iso' };
const printEnv = 'console.log(JSON.stringify({ env: process.env, cwd: process.cwd() }));';
const workRoot = path.join(os.tmpdir(), 'rollout-queue');

describe('codeRunner environment', () => {
  beforeEach(() => {
    process.env.ROLLOUT_TEST_WORKER_ONLY = 'worker-only-value';
    process.env.ROLLOUT_TEST_TOKEN = 'tok-worker-9f8e7d';
  });
  afterEach(() => {
    delete process.env.ROLLOUT_TEST_WORKER_ONLY;
    delete process.env.ROLLOUT_TEST_TOKEN;
  });

  it('passes only PATH, HOME, LANG, TMPDIR and nothing of the worker env', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const output = await run(printEnv, task, fakeContext());
    const seen = JSON.parse(output.stdout) as { env: Record<string, string>; cwd: string };
    // In the tenant view: its own PATH (the interpreters' bin directories, then the system's),
    // /tmp, and the PWD bubblewrap sets; without one, the worker's PATH and the work dir.
    const tenant = currentContainment().tenant;
    expect(Object.keys(seen.env).sort()).toEqual(tenant ? ['HOME', 'LANG', 'PATH', 'PWD', 'TMPDIR'] : ['HOME', 'LANG', 'PATH', 'TMPDIR']);
    if (tenant) expect(seen.env.PWD).toBe(seen.cwd);
    expect(seen.env.PATH).toBe(tenant ? tenant.programPath : process.env.PATH);
    expect(seen.env.HOME).toBe(seen.cwd);
    expect(seen.env.TMPDIR).toBe(tenant ? '/tmp' : seen.cwd);
    expect(seen.env.LANG).toBe('C.UTF-8');
    expect(output.stdout).not.toContain('worker-only-value');
    expect(output.stdout).not.toContain('tok-worker-9f8e7d');
  });

  it('adds exactly the named secrets of ctx.secrets; reserved names are not overridden', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const secrets = { ROLLOUT_TEST_TOKEN: 'tok-from-ctx-123', HOME: '/root' };
    const output = await run(printEnv, task, fakeContext({ secrets }));
    const seen = JSON.parse(output.stdout) as { env: Record<string, string>; cwd: string };
    const pwd = currentContainment().tenant ? ['PWD'] : [];
    expect(Object.keys(seen.env).sort()).toEqual(['HOME', 'LANG', 'PATH', ...pwd, 'ROLLOUT_TEST_TOKEN', 'TMPDIR']);
    // The child got the value; the runner hands the reward what it printed, and the worker
    // redacts the Result it stores (redactSecretsDeep, as rollout-processor does).
    expect(seen.env.ROLLOUT_TEST_TOKEN).toBe('tok-from-ctx-123');
    expect(JSON.stringify(redactSecretsDeep(output, secrets))).not.toContain('tok-from-ctx-123');
    expect(seen.env.HOME).toBe(seen.cwd);
    expect(output.stdout).not.toContain('worker-only-value');
  });

  it('never puts a secret value in an error message', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const secrets = { API_TOKEN: 'sk-live-abcdef123456' };
    const artifact = "console.error('calling with ' + process.env.API_TOKEN + ' failed'); process.exit(2);";
    const err = await rejection(run(artifact, task, fakeContext({ secrets })));
    expect((err as ModelError).type).toBe('NonZeroExit');
    expect(err.message).not.toContain('sk-live-abcdef123456');
    expect(err.message).toContain('calling with [secret API_TOKEN] failed');
  });

  it('a secret holding a NUL byte → InfrastructureError that names it without its value', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const err = await rejection(run('console.log(1)', task, fakeContext({ secrets: { API_TOKEN: 'sk-nul\0value' } })));
    expect(err).toBeInstanceOf(InfrastructureError);
    expect(err.message).toContain('API_TOKEN');
    expect(err.message).not.toContain('sk-nul');
  });

  it('does not leak a piece of a secret that straddles the start of the quoted stderr tail', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    const secret = 'sk-live-STRADDLE-0123456789';
    const secrets = { API_TOKEN: secret };
    // Put the secret so that the last 2048 characters of stderr begin in its middle.
    const artifact = `process.stderr.write('a'.repeat(5000) + process.env.API_TOKEN + 'b'.repeat(${2048 - 10})); process.exit(1);`;
    const err = await rejection(run(artifact, task, fakeContext({ secrets })));
    expect(err.message).not.toContain(secret.slice(-10));
    expect(err.message).not.toContain('0123456789');
  });
});

describe('codeRunner output: raw for the reward, whole values for the worker to redact (issue 11)', () => {
  const secret = 'sk-test-SPLIT-0123456789abcdef';
  const secrets = { MY_API_KEY: secret };

  it('a secret split across two writes with a pause between comes back whole, and is redacted whole in what the worker stores', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
    // Two writes 50 ms apart reach the runner as two chunks, the value cut in the middle.
    const artifact = `
      const v = process.env.MY_API_KEY;
      process.stdout.write('key=' + v.slice(0, 9));
      process.stderr.write('auth ' + v.slice(0, 12));
      setTimeout(() => { process.stdout.write(v.slice(9) + '\\n'); process.stderr.write(v.slice(12) + '\\n'); }, 50);`;
    const output = await run(artifact, task, fakeContext({ secrets }));
    expect(output.stdout).toBe(`key=${secret}\n`);
    const stored = redactSecretsDeep(output, secrets) as typeof output;
    expect(stored.stdout).toBe('key=[secret MY_API_KEY]\n');
    expect(stored.stderr).toBe('auth [secret MY_API_KEY]\n');
    expect(JSON.stringify(stored)).not.toContain(secret.slice(9));
  });

  it('a secret straddling the head cut or the tail cut of a truncated stream leaves no piece behind', async () => {
    const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000, maxOutputBytes: 1000 });
    // Head keeps 500 bytes, tail 500: place one copy across each cut.
    const artifact = `
      const v = process.env.MY_API_KEY;
      process.stdout.write('h'.repeat(490) + v + 'm'.repeat(100000) + v + 't'.repeat(490));`;
    const output = await run(artifact, task, fakeContext({ secrets }));
    expect(output.stdoutTruncated).toBe(true);
    for (const piece of [secret.slice(0, 8), secret.slice(-8), 'SPLIT']) expect(output.stdout).not.toContain(piece);
    expect(output.stdout.startsWith('h'.repeat(490))).toBe(true);
    expect(output.stdout.endsWith('t'.repeat(490))).toBe(true);
  });
});

describe('codeRunner artifact files', () => {
  const run = codeRunner({ entrypoint: 'main.js', timeoutMs: 10_000 });
  const refused: Array<[string, Record<string, string>, RegExp]> = [
    ['a parent escape', { 'main.js': '', '../evil.js': 'x' }, /"\.\.\/evil\.js" leaves the artifact directory/],
    ['a nested escape', { 'main.js': '', 'lib/../../evil.js': 'x' }, /leaves the artifact directory/],
    ['an absolute path', { 'main.js': '', '/tmp/evil.js': 'x' }, /is absolute/],
    ['an empty path', { 'main.js': '', '': 'x' }, /is empty/],
    ['a directory path', { 'main.js': '', 'lib/': 'x' }, /ends with "\/"/],
    ['a "." path', { 'main.js': '', '.': 'x' }, /leaves the artifact directory/],
    ['two spellings of one file', { 'main.js': '', './main.js': 'x' }, /two paths for "main\.js"/],
    ['a file that is also a directory', { 'main.js': '', lib: 'x', 'lib/a.js': 'y' }, /"lib" both as a file and as the directory/],
    ['a content that is not text', { 'main.js': '', 'data.bin': 7 as unknown as string }, /rendered\.files\["data\.bin"\] must be the file's text, got number/],
  ];
  // Fresh-user report: rendered.files is the model's in RL/evolution; a bad file there ended
  // `caller` (CallerError) and stopped the run. It is the model's failure: `model`, BadRenderedFile.
  it.each(refused)('refuses %s as the model\'s BadRenderedFile before writing anything', async (_label, files, message) => {
    const ctx = fakeContext();
    const err = await rejection(run({ files }, task, ctx));
    expect(err).toBeInstanceOf(ModelError);
    expect(brandedKind(err)).toBe('model');
    expect((err as ModelError).type).toBe('BadRenderedFile');
    expect(err.message).toMatch(message);
    expect(existsSync(path.join(os.tmpdir(), 'evil.js'))).toBe(false);
    const made = existsSync(workRoot) ? readdirSync(workRoot).filter((name) => name.startsWith(`${ctx.leaseId}.`)) : [];
    expect(made).toEqual([]);
  });

  it('refuses a rendered value of another shape', async () => {
    const bad = { notFiles: {} } as unknown as { files: Record<string, string> };
    expect(await rejection(run(bad, task, fakeContext()))).toBeInstanceOf(CallerError);
  });

  it('an entrypoint missing from rendered.files → the model\'s BadRenderedFile naming it and the files', async () => {
    const err = await rejection(run({ files: { 'solve.js': 'console.log(1)' } }, task, fakeContext()));
    expect(err).toBeInstanceOf(ModelError);
    expect(brandedKind(err)).toBe('model');
    expect((err as ModelError).type).toBe('BadRenderedFile');
    expect(err.message).toContain('"main.js"');
    expect(err.message).toContain('"solve.js"');
  });

  it('accepts ./ spellings and nested directories', async () => {
    const output = await run(
      { files: { './main.js': "console.log(require('./a/b/c.json').v)", 'a/b/c.json': '{"v":7}' } },
      task,
      fakeContext(),
    );
    expect(output.stdout).toBe('7\n');
  });
});

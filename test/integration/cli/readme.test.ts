import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, REPO_ROOT, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// README is a runnable, tested document: its quick start, its library example (TypeScript:
// test/integration/docs/doc-blocks.test.ts type-checks it under the strictest settings; here it
// is transpiled and run against a real worker), and the CLI reference in docs/cli.md against the
// real --help. Every other block of README and docs/ is checked in test/integration/docs/.
const README = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
const CLI_DOC = readFileSync(path.join(REPO_ROOT, 'docs', 'cli.md'), 'utf8');
const COMMANDS = ['worker', 'run', 'resume', 'status', 'cancel', 'dashboard', 'gateway', 'demo'];
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

/** The first fenced block of `language` after `marker`. */
function blockAfter(marker: string, language: string): string {
  const at = README.indexOf(marker);
  expect(at, `README has ${marker}`).toBeGreaterThanOrEqual(0);
  const match = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(README.slice(at));
  expect(match, `a \`\`\`${language} block after ${marker}`).not.toBeNull();
  return (match as RegExpExecArray)[1] as string;
}

describe('README', () => {
  it('quick start is exactly the two commands', () => {
    expect(blockAfter('## Quick start', 'sh').trim().split('\n')).toEqual(['npm ci && npm run demo', 'npm test']);
  });

  it('the library example runs against a worker and prints one ok line per draft', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('readme') };
    const worker = startCli(['worker', '--queue', 'rollouts', '--name', 'readme-worker'], { env });
    await waitFor(async () => {
      const status = await runCli(['status', '--json'], { env });
      return status.code === 0 && (JSON.parse(status.stdout) as { workers: unknown[] }).workers.length === 1;
    }, 30_000, 'the worker to connect');
    // Inside the repository, so `import 'rollout-queue'` resolves to this package (self-reference).
    const dir = path.join(REPO_ROOT, '.rollout-queue');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `readme-example-${process.pid}.mjs`);
    writeFileSync(file, ts.transpileModule(blockAfter('<!-- readme-example: library', 'ts'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);
    try {
      const outcome = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [file], { cwd: REPO_ROOT, env: { ...process.env, ...env, LOG_LEVEL: 'warn' } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(outcome.code, outcome.stderr).toBe(0);
      const lines = outcome.stdout.trim().split('\n').sort();
      expect(lines).toEqual(['mul-12x12 ok 1 readme-worker', 'mul-3x4 ok 1 readme-worker', 'mul-6x7 ok 1 readme-worker']);
    } finally {
      await rm(file, { force: true });
      worker.child.kill('SIGTERM');
      expect((await worker.done).code).toBe(0);
    }
  });

  it('docs/cli.md documents every option of every command, and README names every command', async () => {
    const missing: string[] = [];
    for (const command of COMMANDS) {
      const help = await runCli([command, '--help']);
      expect(help.code).toBe(0);
      for (const option of new Set(help.stdout.match(/--[a-z][a-z-]+/g) ?? [])) {
        if (option !== '--help' && !CLI_DOC.includes(option)) missing.push(`${command} ${option}`);
      }
      if (!CLI_DOC.includes(`## \`${command}\``)) missing.push(`docs/cli.md section for ${command}`);
      if (!README.includes(`| \`${command}`)) missing.push(`README row for ${command}`);
    }
    expect(missing).toEqual([]);
  });
});

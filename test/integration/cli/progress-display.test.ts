import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellWord } from '../../../src/cli/cli-command.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { requireTool } from '../../helpers/system-tool.js';
import { BIN, REPO_ROOT, runCli, startCli, uniquePrefix, type CliProcess } from './cli-process.js';

// Issue 31: a run you can watch. The real bin against a real worker and Redis, once on a
// terminal (a pty made by util-linux `script`) and once on a pipe.
const TASKS = 6;
const queue = 'progress-view';
let redis: TestRedis;
let dir: string;
let tasksFile: string;
let artifact: string;
let env: Record<string, string>;
let worker: CliProcess;

beforeAll(async () => {
  requireTool('script', 'bsdutils', ['--version']);
  redis = await startRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-progress-'));
  tasksFile = path.join(dir, 'tasks.jsonl');
  artifact = path.join(dir, 'add.js');
  // Tasks 5 and 6 make the artifact exit 1: model / NonZeroExit.
  const lines = Array.from({ length: TASKS }, (_, i) => JSON.stringify({ id: `t${i + 1}`, a: i, answer: i + 1, fail: i >= 4 }));
  await writeFile(tasksFile, `${lines.join('\n')}\n`);
  await writeFile(
    artifact,
    "let input = '';\nprocess.stdin.on('data', (c) => (input += c));\n" +
      "process.stdin.on('end', () => { const t = JSON.parse(input); if (t.fail) process.exit(1); console.log(`${t.a + 1}`); });\n",
  );
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('prog'), LOG_LEVEL: 'warn' };
  worker = startCli(['worker', '--queue', queue, '--concurrency', '2', '--name', 'pw1'], { env });
});

afterAll(async () => {
  worker?.child.kill('SIGTERM');
  await worker?.done;
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
});

function runArgs(runId: string): string[] {
  return [
    'run', '--tasks', tasksFile, '--artifact', artifact, '--run', 'rollout-queue/runners:codeRunner',
    '--reward', 'rollout-queue/rewards:exactMatch', '--queue', queue, '--run-id', runId, '--out', path.join(dir, `${runId}.jsonl`),
  ];
}

/** The run on a terminal: `script` gives it a pty as stdin, stdout and stderr; returns all it drew. */
function runOnTerminal(args: readonly string[]): Promise<{ code: number | null; screen: string }> {
  const command = [process.execPath, BIN, ...args].map(shellWord).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: REPO_ROOT, env: { ...process.env, ...env, COLUMNS: '160', TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => void (screen += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (screen += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, screen }));
  });
}

/** The screen without terminal controls (CSI sequences, ESC 7 / ESC 8 cursor save and restore), one redraw a line. */
const plain = (text: string): string => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '\n').replace(/\x1b[78]/g, '').replace(/\r/g, '');

describe('watching a run', () => {
  it('on a terminal: a live bar with done/total, rate, ETA and counts by kind; then the summary by error type', async () => {
    const { code, screen } = await runOnTerminal(runArgs('tty1'));
    const text = plain(screen);
    expect(code, text).toBe(0);
    // cli-progress' bar (shades_classic), drawn at the start and redrawn in place (cursor
    // controls, no new line) as results come, its last state the whole run.
    expect(text).toMatch(/[█░]{24} 0% \| 0\/6 results \| -\/s \| ETA - \| ok 0 model 0 infra 0 caller 0/);
    expect(screen).toContain('\x1b[');
    expect(text).toMatch(/[█░]{24} 100% \| 6\/6 results \| [\d.]+\/(s|min) \| ETA 0s \| ok 4 model 2 infra 0 caller 0/);
    expect(text).toMatch(/model\s+2 {3}\(NonZeroExit 2\)/);
    expect(text).toMatch(/mean reward\s+0\.667 over all 6 \(a Result that is not ok counts as 0\), 1\.000 over the 4 ok/);
    expect(text).not.toContain('progress:');
  });

  it('on a pipe: plain progress lines with the same facts, no bar', async () => {
    const outcome = await runCli(runArgs('pipe1'), { env });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stderr).toMatch(/^progress: 6\/6 results \(100%\), [\d.]+\/(s|min), ETA 0s; ok 4, model 2, infra 0, caller 0$/m);
    expect(outcome.stderr).not.toMatch(/[█░\r]/);
    expect(outcome.stdout).toMatch(/model\s+2 {3}\(NonZeroExit 2\)/);
  });
});

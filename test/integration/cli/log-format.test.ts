import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellWord } from '../../../src/cli/cli-command.js';
import { requireTool } from '../../helpers/system-tool.js';
import { BIN, REPO_ROOT, startCli, waitFor } from './cli-process.js';

// Issue 31: logs were raw pino JSON on a terminal. The real worker, whose Redis does not answer
// (it logs a warning a second while it waits), on a pty made by `script` and on a pipe.
const NO_REDIS = { REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'info' };
const strip = (text: string): string => text.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r/g, '');

describe('worker logs', () => {
  it('on a terminal: pino-pretty lines (time, coloured level, message, fields below), no JSON', async () => {
    requireTool('script', 'bsdutils');
    const command = [process.execPath, BIN, 'worker', '--queue', 'logfmt'].map(shellWord).join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: REPO_ROOT, env: { ...process.env, ...NO_REDIS }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => void (screen += chunk.toString()));
    const closed = new Promise((resolve) => child.once('close', resolve));
    try {
      await waitFor(() => /retryMs/.test(screen), 30_000, `a pretty warning; the screen: ${screen}`);
    } finally {
      process.kill(-(child.pid as number), 'SIGKILL');
      await closed;
    }
    expect(screen).toContain('\x1b[33mWARN\x1b[39m');
    const text = strip(screen);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: could not connect to Redis at redis:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)\..* Retrying in 1 s\.\n {4}component: "worker"\n {4}queue: "logfmt"\n/m);
    expect(text).not.toContain('{"level"');
  });

  it('on a pipe: one pino JSON object a line', async () => {
    const worker = startCli(['worker', '--queue', 'logfmt'], { env: NO_REDIS });
    try {
      await waitFor(() => worker.stderr().includes('\n'), 30_000, 'a log line');
    } finally {
      worker.child.kill('SIGKILL');
      await worker.done;
    }
    const first = worker.stderr().split('\n')[0] as string;
    expect(JSON.parse(first)).toMatchObject({ level: 40, component: 'worker', queue: 'logfmt', retryMs: 1000 });
  });
});

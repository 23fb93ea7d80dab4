import { spawn } from 'node:child_process';
import { REPO_ROOT, startCli, type CliProcess } from '../integration/cli/cli-process.js';
import { waitFor } from './wait-for.js';

/**
 * Starts `rollout-queue gateway --port 0 …args` as a real process and waits for the URL it
 * prints. (test/integration/gateway/python-client.test.ts starts its own the same way.)
 * @throws Error with the gateway's stderr when it exits before listening.
 */
export async function startGatewayCli(args: readonly string[], env: Record<string, string>): Promise<{ gateway: CliProcess; url: string }> {
  const gateway = startCli(['gateway', '--port', '0', ...args], { env });
  await waitFor(() => {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited early:\n${gateway.stderr()}`);
    return /gateway: http:\/\/\S+/.test(gateway.stdout());
  }, 'the gateway to listen', 20_000);
  return { gateway, url: (/gateway: (http:\/\/127\.0\.0\.1:\d+)/.exec(gateway.stdout()) as RegExpExecArray)[1] as string };
}

/** Runs a python3 script from the repository root; its stdout is one JSON object per line. */
export function runPythonChecks(script: string, args: readonly string[]): Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', [script, ...args], { cwd: REPO_ROOT, env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.once('close', (code) => resolve({ code, stderr, lines: stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) }));
  });
}

import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';
import { REPO_ROOT, startCli, type CliProcess } from '../cli/cli-process.js';

// The Python package clients/python (import rollout_queue), installed offline into a fresh venv
// and tested with pytest against a real gateway process and real worker processes; then the
// evolution example run as a reader would, with a worker SIGKILLed mid-generation.
const TOKEN = 'python-token-0123456789abcdef';
const PACKAGE = path.join(REPO_ROOT, 'clients', 'python');
const EXAMPLE = path.join(REPO_ROOT, 'examples', 'python-evolution');
/** Worker liveness of the example's test: a killed worker's leases come back within seconds. */
const FAST = { lockDurationMs: 2000, stalledIntervalMs: 1000, shutdownGraceMs: 200 };
const run = promisify(execFile);

let redis: TestRedis;
let dir: string;
let q: RawQueue;
const workers: WorkerProcess[] = [];
let gateway: CliProcess;
let url: string;
let venvPython: string;

/**
 * A python3 that has pytest (Debian's python3-pytest; .ci/run installs it): /usr/bin/python3
 * first, then the one on PATH (pyenv's, without pytest here).
 */
function pythonWithPytest(): string {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    if (spawnSync(candidate, ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error('no python3 with pytest: install Debian\'s python3-pytest (and python3-venv), as .ci/run does');
}

/** An environment in which pip reaches no index (the offline install docs/python.md promises). */
function offlineEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PIP_') && key !== 'VIRTUAL_ENV' && key !== 'PYTHONPATH') env[key] = value;
  return { ...env, PIP_CONFIG_FILE: os.devNull, PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
}

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-python-'));
  q = new RawQueue(redis.url);
  for (let i = 0; i < 2; i++) workers.push(await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 3 })));
  gateway = startCli(['gateway', '--port', '0', '--queue', q.name, '--dispatch', 'rq-fixtures/dispatches:scripted', '--auth-token-env', 'GW_TOKEN'], {
    env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: TEST_PREFIX, GW_TOKEN: TOKEN },
  });
  // The package as a user installs it: a fresh venv (with the system's pytest visible), no index.
  const venv = path.join(dir, 'venv');
  await run(pythonWithPytest(), ['-m', 'venv', '--system-site-packages', venv]);
  venvPython = path.join(venv, 'bin', 'python');
  await run(venvPython, ['-m', 'pip', 'install', '--quiet', PACKAGE], { env: offlineEnv() });
  await waitFor(() => {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited early:\n${gateway.stderr()}`);
    return /gateway: http:\/\/\S+/.test(gateway.stdout());
  }, 'the gateway to listen', 20_000);
  url = (/gateway: (http:\/\/127\.0\.0\.1:\d+)/.exec(gateway.stdout()) as RegExpExecArray)[1] as string;
}, 180_000);

afterAll(async () => {
  gateway?.child.kill('SIGTERM');
  await gateway?.done;
  for (const worker of workers) worker.signal('SIGTERM');
  await Promise.all(workers.map((worker) => worker.exited()));
  await q?.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface PythonRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the venv's python; `onLine` sees each stdout line as it comes. */
function python(args: readonly string[], options: { cwd: string; env?: Record<string, string>; onLine?: (line: string) => void }): Promise<PythonRun> {
  return new Promise((resolve) => {
    const child = spawn(venvPython, args, { cwd: options.cwd, env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line);
    });
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Test cases of a JUnit XML report by outcome (pytest --junitxml). */
function junitCases(file: string): { passed: string[]; failed: string[]; skipped: string[] } {
  const xml = readFileSync(file, 'utf8');
  const out = { passed: [] as string[], failed: [] as string[], skipped: [] as string[] };
  for (const match of xml.matchAll(/<testcase [^>]*name="([^"]+)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = match[3] ?? '';
    const name = (match[1] as string).replace(/&quot;/g, '"').replace(/&amp;/g, '&');
    if (/<skipped/.test(body)) out.skipped.push(name);
    else if (/<(failure|error)/.test(body)) out.failed.push(name);
    else out.passed.push(name);
  }
  return out;
}

describe('the Python package (clients/python, import rollout_queue)', () => {
  it('passes its pytest suite against the real gateway and workers: offline install, typed Results, meta, no silent empties, retries, errors', async () => {
    const report = path.join(dir, 'junit.xml');
    const outcome = await python(['-m', 'pytest', '-p', 'no:cacheprovider', '-q', '--junitxml', report, 'tests'], {
      cwd: PACKAGE,
      env: { RQ_TEST_GATEWAY_URL: url, RQ_TEST_GATEWAY_TOKEN: TOKEN, RQ_TEST_WORK_DIR: dir },
    });
    const cases = junitCases(report);
    expect(cases.failed, outcome.stdout + outcome.stderr).toEqual([]);
    expect(cases.skipped).toEqual([]);
    expect(outcome.code, outcome.stdout + outcome.stderr).toBe(0);
    // The suite ran whole: each behaviour the issue names has its test among those that passed.
    for (const name of [
      'test_installs_offline_into_a_fresh_venv_and_imports',
      'test_a_result_is_typed_from_its_wire_dict_and_keeps_the_dict',
      'test_results_are_typed_come_in_completion_order_and_carry_each_drafts_meta',
      'test_a_run_id_used_again_raises_run_delivered_instead_of_yielding_nothing',
      'test_re_scoring_an_incumbent_as_an_evaluation_is_answered_from_the_cache_with_this_drafts_meta',
      'test_returns_the_artifact_the_files_and_the_receipts',
      'test_a_model_failure_raises_by_default_or_is_returned_as_data',
      'test_a_request_is_retried_until_the_gateway_answers',
      'test_the_users_unreachable_port_fails_after_the_documented_schedule_and_says_so_once',
      'test_every_call_tries_retries_plus_one_times_when_connections_are_cut',
      'test_a_stream_that_delivers_then_drops_reconnects_each_time_with_the_whole_budget',
      'test_a_client_sigkilled_mid_loop_sees_again_only_the_result_it_was_handling',
    ]) {
      expect(cases.passed.some((passed) => passed === name || passed.startsWith(`${name}[`)), name).toBe(true);
    }
  }, 300_000);
});

describe('examples/python-evolution', () => {
  it('evolves programs over 3 generations, Results matched by meta, a worker SIGKILLed mid-generation loses nothing; run again it replays', async () => {
    const env = { RQ_GATEWAY_URL: url, RQ_GATEWAY_TOKEN: TOKEN, RUN_PREFIX: 'evolve-test', GENERATIONS: '3', SLOW_S: '1' };
    const [victim, survivor] = workers as [WorkerProcess, WorkerProcess];
    let killed: Promise<unknown> | undefined;
    const first = await python([path.join(EXAMPLE, 'evolve.py')], {
      cwd: os.tmpdir(),
      env,
      onLine: (line) => {
        // Generation 0 done: generation 1's rollouts go out now; kill a worker while it holds some.
        if (killed || !line.includes('"generation": 0')) return;
        killed = waitFor(async () => (await q.queue.getActiveCount()) >= 4, 'generation 1 to be running on both workers', 30_000).then(() => victim.kill());
      },
    });
    expect(first.code, first.stderr).toBe(0);
    expect(await killed).toMatchObject({ signal: 'SIGKILL' });
    expect(survivor.proc.exitCode).toBeNull();
    const lines = first.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const generations = lines.filter((line) => 'generation' in line);
    // Every candidate x task scored in every generation: 4 programs x 3 tasks, none lost.
    expect(generations.map((line) => [line.generation, line.rollouts, line.kinds])).toEqual([[0, 12, ['ok']], [1, 12, ['ok']], [2, 12, ['ok']]]);
    // Scored by judge.py through the program reward: every Result carries its details.
    expect(generations.map((line) => line.judged)).toEqual([12, 12, 12]);
    // The leases the killed worker held came back under the same lease ids: re-dispatched, not lost.
    expect(generations[1]?.redispatched).toBeGreaterThanOrEqual(1);
    // No program of generation 0 adds; "+" appears by mutation and wins.
    expect(generations[0]).toMatchObject({ fitness: 0 });
    expect(lines.at(-1)).toEqual({ done: true, best: '+', fitness: 1 });

    // Started again with the same RUN_PREFIX (as after a crash): finished generations replay.
    const again = await python([path.join(EXAMPLE, 'evolve.py')], { cwd: os.tmpdir(), env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(first.stdout);
  }, 300_000);

  it('judge.py, the example\'s program reward (docs/python.md), scores by the last number printed', async () => {
    const judge = (stdin: object): Promise<unknown> => new Promise((resolve, reject) => {
      const child = spawn(venvPython, [path.join(EXAMPLE, 'judge.py')]);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString()));
      child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`judge.py exited ${code}`))));
      child.stdin.end(JSON.stringify(stdin));
    });
    expect(await judge({ task: { id: 'add-0', answer: 5 }, output: { stdout: 'thinking 2 3\n5\n', exitCode: 0 } })).toEqual({ reward: 1, details: { got: 5, gold: 5 } });
    expect(await judge({ task: { id: 'add-0', answer: 5 }, output: { stdout: '-1\n' } })).toEqual({ reward: 0, details: { got: -1, gold: 5 } });
    expect(await judge({ task: { id: 'add-0', answer: 5 }, output: { stdout: 'no idea' } })).toEqual({ reward: 0, details: { why: 'no number in the output' } });
  });
});

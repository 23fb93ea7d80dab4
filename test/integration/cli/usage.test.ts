import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, REPO_ROOT, runCli, uniquePrefix } from './cli-process.js';

// Usage errors exit 2 and name what is wrong; nothing reaches Redis.
// Paths are known when the test table is built; the files are written before the tests run.
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-usage-'));
const tasks = path.join(dir, 'tasks.jsonl');
const artifact = path.join(dir, 'solve.js');
const artifactDir = path.join(dir, 'dart');
const bigArtifact = path.join(dir, 'big.txt');
const badPlacementValue = path.join(dir, 'bad-placement-value.jsonl');
const badPlacementType = path.join(dir, 'bad-placement-type.jsonl');
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
  await writeFile(tasks, '{"id":"a","answer":1}\n\n{"id":"b","answer":2}\n');
  await writeFile(artifact, 'console.log(1)\n');
  await writeFile(bigArtifact, 'a'.repeat(1_100_000));
  await writeFile(badPlacementValue, '{"id":"a","answer":1}\n{"id":"b","answer":2,"placement":{"region":5}}\n');
  await writeFile(badPlacementType, '{"id":"a","answer":1}\n{"id":"b","answer":2,"placement":"eu"}\n');
  mkdirSync(artifactDir);
  await writeFile(path.join(artifactDir, 'main.py'), 'print(1)\n');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

const runArgs = (overrides: Record<string, string | undefined> = {}): string[] => {
  const options: Record<string, string | undefined> = {
    '--tasks': tasks,
    '--artifact': artifact,
    '--run': 'rollout-queue/runners:codeRunner',
    '--reward': 'rollout-queue/rewards:lastNumber',
    '--reward-config': '{"goldKey":"answer"}',
    ...overrides,
  };
  return ['run', ...Object.entries(options).flatMap(([key, value]) => (value === undefined ? [] : [key, value]))];
};

describe('usage errors exit 2 naming the option', () => {
  it.each([
    ['a non-number --concurrency', ['worker', '--concurrency', 'abc'], '--concurrency'],
    ['a zero --concurrency', ['worker', '--concurrency', '0'], '--concurrency'],
    ['an unknown option', ['status', '--bogus'], '--bogus'],
    ['an unknown command', ['bogus'], 'bogus'],
    ['a bad queue name', ['status', '--queue', 'a:b'], '--queue'],
    ['a run id with a dot', ['status', 'run.1'], 'runId'],
    ['a missing --tasks', runArgs({ '--tasks': undefined }), "error: required option '--tasks <file>' not specified"],
    // Fresh-user report: commander named the missing --tasks, never the misspelt --taks beside it.
    ['a misspelt required option', [...runArgs({ '--tasks': undefined }), '--taks', tasks], "error: unknown option '--taks'\n(Did you mean --tasks?)"],
    ['a --run without module:export', runArgs({ '--run': 'codeRunner' }), 'module:export'],
    ['a --run-config that is not JSON', runArgs({ '--run-config': '{oops' }), '--run-config'],
    ['a --reward-config that is an array', runArgs({ '--reward-config': '[1]' }), '--reward-config'],
    ['an --env value instead of a name', runArgs({ '--env': 'sk-live-123' }), '--env'],
    ['a --hang-ms below --run-ms', runArgs({ '--run-ms': '5000', '--hang-ms': '1000' }), '--hang-ms'],
    // Fresh-user report: --hang-ms 1000 alone killed a slow, healthy rollout as wedged three times (infrastructure).
    ['a --hang-ms below the default --run-ms', runArgs({ '--hang-ms': '1000' }), '--hang-ms (1000) must be above --run-ms (600000, the default): a slow rollout is judged (model) before it is presumed wedged (re-dispatch); give a --run-ms below it too'],
    ['a --run-ms above the default --hang-ms', runArgs({ '--run-ms': '1000000' }), '--hang-ms (900000, the default) must be above --run-ms (1000000): a slow rollout is judged (model) before it is presumed wedged (re-dispatch); give a --hang-ms above it too'],
    ['a missing --artifact path', runArgs({ '--artifact': path.join(os.tmpdir(), 'no-such-artifact') }), '--artifact'],
    // Regression (fresh-user report): every lease ended infrastructure after 2 re-dispatches, exit 0.
    ['a codeRunner entrypoint that is not a file of a directory artifact', runArgs({ '--artifact': artifactDir, '--run-config': '{"entrypoint":["python3","nomain.py"]}' }), '"nomain.py" is not a file of --artifact (its files: "main.py")'],
    // Fresh-user report: a directory artifact without "entrypoint" was enqueued and every lease ended caller (exit 3).
    ['a codeRunner --run-config without entrypoint for a directory artifact', runArgs({ '--artifact': artifactDir, '--run-config': '{"timeoutMs":5000}' }), `--run-config: codeRunner needs the file of the --artifact directory to run, in "entrypoint": pass --run-config '{"entrypoint":"main.py"}' (its files: "main.py")`],
    // Fresh-user report: with no --run-config at all it blamed "--run-config: … got undefined", an option never given.
    ['no --run-config for a directory artifact', runArgs({ '--artifact': artifactDir }), `pass --run-config '{"entrypoint":"main.py"}'`],
    // Fresh-user report: a misspelt "entrypont" was told codeRunner "needs … entrypoint", not which key was wrong.
    ['a misspelt entrypoint key for a directory artifact', runArgs({ '--artifact': artifactDir, '--run-config': '{"entrypont":"main.py"}' }), '--run-config: codeRunner: config.entrypont is not an option; allowed options are entrypoint, timeoutMs, maxOutputBytes, command (check the spelling)'],
    ['a codeRunner --run-config with a misspelt key', runArgs({ '--artifact': artifactDir, '--run-config': '{"entrypoint":"main.py","timeoutms":5000}' }), 'timeoutms'],
    ['a codeRunner --run-config with a misspelt key, single-file artifact', runArgs({ '--run-config': '{"timeoutms":5000}' }), '--run-config: codeRunner'],
    // Fresh-user report: these passed the up-front checks and ended every lease caller after enqueueing (exit 3).
    ['a --reward-ms over the spec bound', runArgs({ '--reward-ms': '999999999' }), '--reward-ms: spec field "timeouts.rewardMs": Too big'],
    ['a --memory-mb under the spec bound', runArgs({ '--memory-mb': '10' }), "option '--memory-mb <mib>' argument '10' is invalid. must be a whole number >= 64"],
    // Fresh-user report: maxOutputBytes 32 MiB under --memory-mb 64 crashed every rollout child (infrastructure after re-dispatches).
    ['a codeRunner maxOutputBytes the rollout child cannot report under --memory-mb', runArgs({ '--memory-mb': '64', '--run-config': '{"timeoutMs":5000,"maxOutputBytes":33554432}' }), '--run-config with --memory-mb (sandbox.memoryMb, default 1024): codeRunner: config.maxOutputBytes = 33554432 (per stream) does not fit in sandbox.memoryMb = 64 MiB'],
    ['a misspelt built-in --reward-config key', runArgs({ '--reward-config': '{"goldkey":"answer"}' }), '--reward-config: lastNumber: config.goldkey'],
    ['a task line placement label that is not a string', runArgs({ '--tasks': badPlacementValue }), 'bad-placement-value.jsonl:2: spec field "placement.region"'],
    // Fresh-user report: the only task-file error without "Nothing was enqueued.".
    ['a task line placement that is not an object', runArgs({ '--tasks': badPlacementType }), 'remove it to use --placement. Nothing was enqueued.'],
    // Second fresh-user pass: a misspelt built-in export was enqueued and ended caller (exit 3).
    // Fresh-user report (third pass): an unknown module of this package reached the workers and ended caller (exit 3).
    ['an unknown rollout-queue module as --run', runArgs({ '--run': 'rollout-queue/nosuch:foo' }), '--run rollout-queue/nosuch:foo: rollout-queue has no such module for --run; its built-ins are in rollout-queue/runners (e.g. rollout-queue/runners:codeRunner), or name a module of your own'],
    ['a runner module as --reward', runArgs({ '--reward': 'rollout-queue/runners:codeRunner' }), '--reward rollout-queue/runners:codeRunner: rollout-queue has no such module for --reward; its built-ins are in rollout-queue/rewards'],
    // Fresh-user report (third pass): a Node builtin was enqueued and stopped the run on its first caller Result (exit 3).
    ['a Node builtin as --run', runArgs({ '--run': 'node:child_process:exec' }), '--run: module "node:child_process" is a Node builtin; builtins are never imported by a Ref, whatever the allowlist'],
    ['a file path as --reward', runArgs({ '--reward': './my-reward.js:score' }), '--reward: module "./my-reward.js" is a file path'],
    ['a misspelt built-in run export', runArgs({ '--run': 'rollout-queue/runners:codeRunnr' }), '--run rollout-queue/runners:codeRunnr: the module has no such export; it exports codeRunner'],
    // Fresh-user report: "…(any package of the scope).; see …".
    ['a bare * in --allow', ['worker', '--allow', '*'], '"@scope/*" (any package of the scope); see '],
    ['a --max-spec-bytes under its bound', runArgs({ '--max-spec-bytes': '1000' }), "option '--max-spec-bytes <bytes>' argument '1000' is invalid. must be a whole number from 1024 to 536870912"],
    ['a misspelt built-in reward export', runArgs({ '--reward': 'rollout-queue/rewards:lastNumbr' }), '--reward rollout-queue/rewards:lastNumbr: the module has no such export; it exports answerText, command, contains, exactMatch, lastNumber, regex'],
  ])('%s', async (_label, args, named) => {
    const outcome = await runCli(args, { env: { REDIS_URL: redis.url } });
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toContain(named);
  });

  it('no command at all shows the help and exits 2', async () => {
    const outcome = await runCli([]);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('Usage: rollout-queue');
  });

  it('--version prints the package version and exits 0', async () => {
    const outcome = await runCli(['--version']);
    expect(outcome.code, outcome.stderr).toBe(0);
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(outcome.stdout).toBe(`${version}\n`);
  });

  it('--help exits 0', async () => {
    const outcome = await runCli(['run', '--help']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toContain('--max-in-flight');
  });
});

// Fresh-user report: a 40 MB artifact was enqueued and the run stopped on its first caller Result
// (exit 3), saying "raise maxSpecBytes", an option `run` did not have.
it('an artifact over --max-spec-bytes exits 2 naming --artifact and the size that fits, and nothing is enqueued', async () => {
  const prefix = uniquePrefix('usage');
  const outcome = await runCli(runArgs({ '--artifact': bigArtifact, '--run': 'rq-fixtures/failures:echo', '--run-id': 'usage-big' }), { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
  expect(outcome.code, outcome.stderr).toBe(2);
  expect(outcome.stderr).toMatch(/^error: --artifact: the largest rollout spec \(the artifact, the task and the options, as JSON\) would be 110\d{4} bytes, over --max-spec-bytes 1048576 \(the default\); pass --max-spec-bytes 110\d{4} or more/);
  expect(outcome.stdout).toBe('');
  const client = new Redis(redis.url);
  try {
    expect(await client.keys(`${prefix}:*`)).toEqual([]);
  } finally {
    client.disconnect();
  }
});

// Fresh-user report: "cannot read --tasks /tmp/nope.jsonl: ENOENT".
it('a --tasks or --artifact that does not exist exits 2 saying so in words', async () => {
  const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('usage') };
  const missing = path.join(dir, 'nope.jsonl');
  const tasks = await runCli(runArgs({ '--tasks': missing, '--run-id': 'usage-missing' }), { env });
  expect(tasks.code).toBe(2);
  expect(tasks.stderr).toBe(`error: cannot read --tasks ${missing}: no such file or directory (ENOENT)\n`);
  const artifact = await runCli(runArgs({ '--artifact': path.join(dir, 'nope.js'), '--run-id': 'usage-missing' }), { env });
  expect(artifact.code).toBe(2);
  expect(artifact.stderr).toContain(`cannot read --artifact ${path.join(dir, 'nope.js')}: no such file or directory (ENOENT)`);
});

describe('a bad tasks file exits 2 naming file:line, and nothing is enqueued', () => {
  const cases: Array<[string, string | Buffer, RegExp]> = [
    // Fresh-user report: a Latin-1 file's é ran as U+FFFD.
    ['a Latin-1 byte on line 2', Buffer.from('{"id":"a"}\n{"id":"caf\xe9"}\n', 'latin1'), /bad\.jsonl:2: not UTF-8 text \(byte 11 of the line, 0xe9, begins no valid UTF-8 sequence\); save the file as UTF-8\. Nothing was enqueued\./],
    ['malformed JSON on line 3', '{"id":"a"}\n\n{"id": "b",,}\n{"id":"c"}\n', /bad\.jsonl:3: not valid JSON/],
    ['an array on line 2', '{"id":"a"}\n[1,2]\n', /bad\.jsonl:2: expected a JSON object, got array/],
    ['a repeated task id', '{"id":"a"}\n{"id":"b"}\n{"id":"a"}\n', /bad\.jsonl:3: task id "a" repeats line 1/],
    // A task without an id is named by its line number: the message says so instead of "repeats".
    ['a task id equal to an earlier id-less line\'s number', '{"q":"x"}\n{"id":"1"}\n', /bad\.jsonl:2: task id "1" is the key of line 1, a task without an id \(it is named by its line number\)/],
    ['an id-less task whose line number an earlier id took', '{"id":2}\n{"q":"x"}\n', /bad\.jsonl:2: this task has no id, so it is named by its line number "2", which line 1 already uses as its task id/],
    ['a task id that is an object', '{"id":{"x":1}}\n', /bad\.jsonl:1: task\.id/],
    ['only blank lines', '\n\n  \n', /holds no tasks/],
    // Fresh-user report: an empty file's message alone lacked the fix and "Nothing was enqueued".
    ['an empty file', '', /bad\.jsonl holds no tasks \(it is empty or only blank lines\); write one JSON object per line, e\.g\. \{"id": "t1", "answer": 42\}\. Nothing was enqueued\./],
  ];
  it.each(cases)('%s', async (_label, content, message) => {
    const file = path.join(dir, 'bad.jsonl');
    await writeFile(file, content);
    const prefix = uniquePrefix('usage');
    const outcome = await runCli(runArgs({ '--tasks': file, '--run-id': 'usage-run' }), {
      env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix },
    });
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stderr).toMatch(message);
    const client = new Redis(redis.url);
    try {
      expect(await client.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      client.disconnect();
    }
  });
});

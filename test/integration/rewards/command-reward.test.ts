import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Result } from '../../../src/spec/index.js';
import { makeSpec, RawQueue } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess, type WorkerProcess } from '../../helpers/worker-process.js';

// Issue 30 item 2 through a real worker (its own containment, `auto`: sealed on this machine): the
// command reward runs a judge program per rollout, contained like codeRunner's artifact, with
// {"task", "output"} on stdin, and reads its reward (and details) from stdout.

let redis: TestRedis;
let q: RawQueue;
let worker: WorkerProcess;
/**
 * A venv of the worker's python3 holding `rqjudge`, a judge package "installed on the worker".
 * Under /var/tmp, not /tmp: the judge's own /tmp (a tmpfs of its sandbox) hides the host's.
 */
let venv: string;

const JUDGE_MODULE = `import json, sys
from fractions import Fraction
from rqjudge.numbers import as_fraction  # another module of the installed package

def main():
    request = json.load(sys.stdin)
    got = as_fraction(request["output"]["stdout"])
    gold = Fraction(request["task"]["answer"])
    print(json.dumps({"reward": 1 if got == gold else 0, "details": {"got": str(got), "gold": str(gold), "from": __file__}}))

if __name__ == "__main__":
    main()
`;

beforeAll(async () => {
  venv = mkdtempSync('/var/tmp/rq-judge-venv-');
  // Readable by the judge's unprivileged uid (a root worker drops it to 65534): mkdtemp makes 0700,
  // and an interpreter under /root (pyenv) is out of its reach, so the venv is of the system's python3.
  chmodSync(venv, 0o755);
  const made = spawnSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`python3 -m venv failed: ${made.stderr}`);
  const lib = path.join(venv, 'lib');
  const site = path.join(lib, readdirSync(lib).find((name) => name.startsWith('python')) as string, 'site-packages');
  mkdirSync(path.join(site, 'rqjudge'));
  writeFileSync(path.join(site, 'rqjudge', '__init__.py'), '');
  writeFileSync(path.join(site, 'rqjudge', 'judge.py'), JUDGE_MODULE);
  writeFileSync(path.join(site, 'rqjudge', 'numbers.py'), 'from fractions import Fraction\n\ndef as_fraction(text):\n    return Fraction(text.strip().split()[-1])\n');
  redis = await startRedis();
  q = new RawQueue(redis.url);
  // The venv first on the worker's PATH: its python3 is the one judges (and artifacts) get.
  worker = await startWorkerProcess(q.workerOptions({ concurrency: 4 }), { PATH: `${path.join(venv, 'bin')}:${process.env.PATH ?? ''}` });
});
afterAll(async () => {
  if (worker) {
    worker.signal('SIGTERM');
    expect((await worker.exited()).code).toBe(0);
  }
  await q?.close();
  await redis?.stop();
  if (venv) rmSync(venv, { recursive: true, force: true });
});

const codeRun = { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.py', timeoutMs: 20_000 } };
/** Prints the task keys it received on stderr and `answer` on stdout. */
const program = (answer: string): string => `import json, sys\ntask = json.load(sys.stdin)\nprint(",".join(sorted(task)), file=sys.stderr)\nprint(${JSON.stringify(answer)})\n`;
const judgeRef = (judge: string, extra: Record<string, unknown> = {}) => ({ $ref: 'rollout-queue/rewards:command', config: { command: ['python3', 'judge.py'], files: { 'judge.py': judge }, ...extra } });

async function runOne(key: string, reward: ReturnType<typeof judgeRef>, options: { answer?: string; task?: Record<string, unknown> } = {}): Promise<Result> {
  const spec = makeSpec('cmd', key, {
    rendered: { files: { 'main.py': program(options.answer ?? '5') } },
    run: codeRun,
    reward,
    task: options.task ?? { id: key, a: 2, b: 3, answer: 5 },
  });
  await q.add([spec]);
  const { results, failed } = await q.waitForAll([spec.leaseId], 120_000);
  const result = results.get(spec.leaseId);
  if (!result) throw new Error(`lease ${spec.leaseId} failed: ${failed.get(spec.leaseId)}`);
  return result;
}

describe('rollout-queue/rewards:command on a real worker', () => {
  it('a Python judge shipped in files scores with the gold, keeps its details, and the run never saw the gold', async () => {
    const judge = 'import json, sys\nr = json.load(sys.stdin)\nok = r["output"]["stdout"].strip() == str(r["task"]["answer"])\nprint(json.dumps({"reward": 1 if ok else 0, "details": {"taskKeys": sorted(r["task"]), "runSaw": r["output"]["stderr"].strip()}}))\n';
    const [right, wrong] = await Promise.all([runOne('files-right', judgeRef(judge)), runOne('files-wrong', judgeRef(judge), { answer: '6' })]);
    expect(right).toMatchObject({ kind: 'ok', reward: 1, goldVisibleToRun: false, rewardDetails: { taskKeys: ['a', 'answer', 'b', 'id'], runSaw: 'a,b,id' } });
    expect(wrong).toMatchObject({ kind: 'ok', reward: 0, rewardDetails: { runSaw: 'a,b,id' } });
  });

  it("a judge installed on the worker (a package in the venv the worker's python3 is), run with -m, imports it", async () => {
    const reward = { $ref: 'rollout-queue/rewards:command', config: { command: ['python3', '-m', 'rqjudge.judge'] } };
    const result = await runOne('installed', reward as ReturnType<typeof judgeRef>, { answer: 'the answer is 2/4', task: { id: 'installed', answer: '0.5' } });
    expect(result.error).toBeNull();
    expect(result).toMatchObject({ kind: 'ok', reward: 1, rewardDetails: { got: '1/2', gold: '1/2', from: expect.stringContaining(`${venv}/lib/`) } });
  });

  it('with seeWorkDir the judge gets a copy of what the program left in its work dir under artifact/; without it, nothing', async () => {
    const writes = 'import json, os, sys\ntask = json.load(sys.stdin)\nos.makedirs("out", exist_ok=True)\nopen("out/answer.txt", "w").write(str(task["a"] + task["b"]))\nprint("wrote")\n';
    const judge = 'import json, os, sys\nr = json.load(sys.stdin)\nseen = sorted(os.path.join(d, f) for d, _, fs in os.walk("artifact") for f in fs) if os.path.isdir("artifact") else []\nanswer = open("artifact/out/answer.txt").read() if "artifact/out/answer.txt" in seen else None\nprint(json.dumps({"reward": 1 if answer == str(r["task"]["answer"]) else 0, "details": {"seen": seen}}))\n';
    const spec = (key: string, seeWorkDir: boolean) => makeSpec('cmd', key, { rendered: { files: { 'main.py': writes } }, run: codeRun, reward: judgeRef(judge, { seeWorkDir }), task: { id: key, a: 2, b: 3, answer: 5 } });
    const asked = spec('workdir-asked', true);
    const not = spec('workdir-not', false);
    await q.add([asked, not]);
    const { results } = await q.waitForAll([asked.leaseId, not.leaseId], 120_000);
    expect(results.get(asked.leaseId)).toMatchObject({ kind: 'ok', reward: 1, rewardDetails: { seen: ['artifact/main.py', 'artifact/out/answer.txt'] } });
    expect(results.get(not.leaseId)).toMatchObject({ kind: 'ok', reward: 0, rewardDetails: { seen: [] } });
  });

  it('a bare number on stdout is the reward, with no details', async () => {
    const result = await runOne('bare', judgeRef('print(0.25)\n'));
    expect(result).toMatchObject({ kind: 'ok', reward: 0.25 });
    expect(result).not.toHaveProperty('rewardDetails');
  });

  it('a judge that crashes ends the rollout model, quoting its stderr', async () => {
    const result = await runOne('crash', judgeRef('import sys\nsys.stderr.write("judge broke: no rubric\\n")\nsys.exit(3)\n'));
    expect(result.kind).toBe('model');
    expect(result.error?.type).toBe('RewardThrew:NonZeroExit');
    expect(result.error?.message).toContain('exited with code 3');
    expect(result.error?.message).toContain('judge broke: no rubric');
    expect(result.output).toMatchObject({ stdout: '5\n' });
  });

  it('a judge that prints "abc" or a number outside rewardRange ends the rollout caller', async () => {
    const [text, outside] = await Promise.all([runOne('abc', judgeRef('print("abc")\n')), runOne('outside', judgeRef('print(7)\n'))]);
    expect(text).toMatchObject({ kind: 'caller', reward: null, error: { type: 'RewardOutOfRange' } });
    expect(text.error?.message).toContain('"abc"');
    expect(outside).toMatchObject({ kind: 'caller', reward: null, error: { type: 'RewardOutOfRange' } });
    expect(outside.error?.message).toContain('returned 7');
  });

  it('details over the size limit end the rollout caller, naming the limit', async () => {
    const result = await runOne('big-details', judgeRef('import json\nprint(json.dumps({"reward": 1, "details": {"log": "x" * 20000}}))\n'));
    expect(result).toMatchObject({ kind: 'caller', error: { type: 'RewardDetailsInvalid' } });
    expect(result.error?.message).toContain('8192-byte limit');
  });

  it('a judge that hangs past its timeoutMs is killed and the rollout ends model / RewardTimeout', async () => {
    const result = await runOne('hang', judgeRef('import time\nwhile True:\n    time.sleep(60)\n', { timeoutMs: 1000 }));
    expect(result).toMatchObject({ kind: 'model', reward: null, error: { type: 'RewardTimeout' } });
    expect(result.error?.message).toContain('timeoutMs = 1000 ms');
  });

  it('a judge over its own memoryMb is killed and the rollout ends model / RewardThrew:MemoryLimit', async () => {
    const result = await runOne('memory', judgeRef('import json, sys\njson.load(sys.stdin)\nhog = bytearray(400 * 1024 * 1024)\nprint(1)\n', { memoryMb: 64 }));
    expect(result).toMatchObject({ kind: 'model', reward: null, error: { type: 'RewardThrew:MemoryLimit' } });
    expect(result.error?.message).toContain('memory limit of 64 MiB');
  });

  it("a judge cannot reach the network (the queue's Redis) at this worker's level", async () => {
    const port = new URL(redis.url).port;
    const judge = `import json, socket, sys\njson.load(sys.stdin)\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), timeout=5).close()\n    reached = True\nexcept OSError as err:\n    reached = type(err).__name__\nprint(json.dumps({"reward": 1, "details": {"reached": reached}}))\n`;
    const result = await runOne('network', judgeRef(judge));
    expect(result).toMatchObject({ kind: 'ok', reward: 1 });
    expect((result.rewardDetails as { reached: unknown }).reached).not.toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { command } from '../../src/rewards/index.js';
import { useContainment, workRoot } from '../../src/sandbox/index.js';
import { hostProcesses } from '../helpers/host-processes.js';
import { fakeContext } from '../unit/runners/fake-context.js';
import { attack, containmentOf, LEVELS, openBoundaries, reportOf, untilHostProcess } from './hostile-helpers.js';

// Issue 30 item 2: a command reward's judge (its files shipped in the reward's config) is out of
// the artifacts' reach. The judge of one rollout runs while the artifact of another runs beside it
// (shared children run many rollouts at once); the artifact hunts for judge.py (the work root where
// sandboxes live, /dev/shm, the cwd of every process in /proc) and tries to overwrite it. At sealed
// it finds nothing and the judge's files are intact; at a level whose filesystem boundary is open
// (docs/security.md) it finds the judge, so the boundary is what keeps it out. This process stands
// in for the worker (the reward and codeRunner run in it, as in a rollout child). The other way
// round too: a judge cannot find the files of an artifact running beside it.

/**
 * A judge that holds still until SIGUSR1: once its handler is set it starts a sleeper whose argv
 * says so (`<marker>-ready`, the only sign a sealed judge gives the host); on the signal it
 * checks its own files against what it was shipped and prints the verdict as its details.
 */
const JUDGE = `import hashlib, json, signal, subprocess, sys
MARKER = sys.argv[1]
SHIPPED = open("judge.py").read()
request = json.load(sys.stdin)
def verdict(*_):
    intact = open("judge.py").read() == SHIPPED and open("rubric.txt").read() == "rubric " + MARKER
    sleeper.kill()
    print(json.dumps({"reward": 1, "details": {"intact": intact, "sawGold": request["task"].get("answer")}}))
    sys.stdout.flush()
    sys.exit(0)
signal.signal(signal.SIGUSR1, verdict)
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARKER + "-ready"])
sleeper.wait()
`;

/** A judge that hunts for the notes of an artifact running beside it (the work root, every cwd in /proc). */
const HUNTING_JUDGE = `import json, os, sys
request = json.load(sys.stdin)
marker, found = request["task"]["marker"], 0
def visit(path):
    global found
    try:
        with open(path) as f:
            found += marker in f.read()
    except Exception:
        pass
for root in request["task"]["roots"]:
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.count(os.sep) - root.count(os.sep) >= 3:
            dirnames[:] = []
        if "notes.txt" in filenames:
            visit(os.path.join(dirpath, "notes.txt"))
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    visit("/proc/%s/cwd/notes.txt" % pid)
print(json.dumps({"reward": 1, "details": {"found": found}}))
`;

for (const { mode, level } of LEVELS) {
  describe(`a judge's files at ${level}`, () => {
    it('an artifact running beside a judge cannot find, read or overwrite its files (filesystem)', async () => {
      const containment = containmentOf(mode);
      useContainment(containment);
      const marker = `JUDGE-${process.pid}-${level.replace(/[^a-z]/g, '')}`;
      const reward = command({ command: ['python3', 'judge.py', marker], files: { 'judge.py': `# ${marker}\n${JUDGE}`, 'rubric.txt': `rubric ${marker}` }, timeoutMs: 120_000 });
      const judged = reward({ id: 'j', answer: 42 }, { stdout: '42\n' }, fakeContext({ memoryMb: 512, sandbox: { env: [], memoryMb: 512 } }));
      await untilHostProcess(`${marker}-ready`, 60_000);
      const report = reportOf(await attack(containment, 'find_judge', { marker, roots: [workRoot(), '/dev/shm'] }));
      for (const judge of hostProcesses().filter((p) => p.state !== 'Z' && p.argv.includes(marker))) process.kill(judge.pid, 'SIGUSR1');
      const result = await judged;
      if (openBoundaries(containment).includes('filesystem')) {
        // The gap is real: the judge's directory is on the host's file system, in the artifact's reach.
        expect(report.found).toBeGreaterThan(0);
      } else {
        expect(report).toMatchObject({ found: 0, read: 0, written: 0 });
        expect(result).toEqual({ reward: 1, details: { intact: true, sawGold: 42 } });
      }
    });

    it("a judge cannot find or read the files of an artifact running beside it (filesystem)", async () => {
      const containment = containmentOf(mode);
      useContainment(containment);
      const marker = `NOTES-${process.pid}-${level.replace(/[^a-z]/g, '')}`;
      const held = attack(containment, 'hold_files', { marker }, { timeoutMs: 120_000 });
      await untilHostProcess(`${marker}-ready`, 60_000);
      const reward = command({ command: ['python3', 'judge.py'], files: { 'judge.py': HUNTING_JUDGE }, timeoutMs: 60_000 });
      let judged: unknown;
      try {
        judged = await reward({ id: 'n', marker, roots: [workRoot(), '/dev/shm'] }, { stdout: '' }, fakeContext({ memoryMb: 512, sandbox: { env: [], memoryMb: 512 } }));
      } finally {
        for (const sleeper of hostProcesses().filter((p) => p.state !== 'Z' && p.argv.includes(`${marker}-ready`))) process.kill(sleeper.pid, 'SIGKILL');
      }
      expect(reportOf(await held)).toEqual({ held: true });
      const { found } = (judged as { details: { found: number } }).details;
      if (openBoundaries(containment).includes('filesystem')) expect(found).toBeGreaterThan(0);
      else expect(found).toBe(0);
    });
  });
}

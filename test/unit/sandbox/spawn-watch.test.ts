import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The watch patches process-wide bindings and must be installed before other code runs, so each
// case runs in a fresh node process against the built module (`npm test` builds first).
const dist = (path: string): string => fileURLToPath(new URL(`../../../dist/sandbox/${path}`, import.meta.url));

interface ProbeReport {
  readonly watching: boolean;
  readonly steps: Record<string, unknown>;
}

/** Runs `body` (ESM, top-level await) after installing the watch first thing; returns what it reports. */
function probe(body: string, execArgv: readonly string[] = []): Promise<ProbeReport> {
  const script = `
    import { watchSpawns, spawnedSinceLook } from ${JSON.stringify(dist('spawn-watch.js'))};
    const watching = watchSpawns();
    const { ownChildren } = await import(${JSON.stringify(dist('own-children.js'))});
    const steps = {};
    const { readdirSync, readlinkSync } = require('node:fs');
    const loadavgOpen = () => readdirSync('/proc/self/fd').some((fd) => { try { return readlinkSync('/proc/self/fd/' + fd) === '/proc/loadavg'; } catch { return false; } });
    ${body}
    console.log(JSON.stringify({ watching, steps }));
    process.exit(0);
  `;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...execArgv, '--input-type=module', '-e', `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);\n${script}`], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as ProbeReport);
    });
  });
}

describe('spawn watch (a rollout child proves it has no children without reading /proc)', () => {
  it('after an empty walk and no spawn, nothing is looked for; the pid cursor is never opened', async () => {
    const { watching, steps } = await probe(`
      steps.first = ownChildren();
      steps.flaggedAfterWalk = spawnedSinceLook();
      steps.second = ownChildren();
      steps.loadavgOpen = loadavgOpen();
    `);
    expect(watching).toBe(true);
    expect(steps).toEqual({ first: [], flaggedAfterWalk: false, second: [], loadavgOpen: false });
  });

  it('a child started by spawn (CommonJS) or fork (ESM import) is found by the next walk', async () => {
    const { steps } = await probe(`
      const { spawn } = require('node:child_process');
      const { fork } = await import('node:child_process');
      ownChildren();
      const sleeper = spawn('sleep', ['30'], { stdio: 'ignore', detached: true });
      steps.flagged = spawnedSinceLook();
      steps.foundSleeper = ownChildren().includes(sleeper.pid);
      sleeper.kill('SIGKILL');
      await new Promise((resolve) => sleeper.once('exit', resolve));
      steps.quietAgain = ownChildren();
      const forked = fork('-e', ['setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
      steps.foundForked = ownChildren().includes(forked.pid);
      forked.kill('SIGKILL');
    `);
    expect(steps).toEqual({ flagged: true, foundSleeper: true, quietAgain: [], foundForked: true });
  });

  it('a synchronous spawn (execSync) counts as a spawn', async () => {
    const { steps } = await probe(`
      ownChildren();
      require('node:child_process').execSync('true');
      steps.flagged = spawnedSinceLook();
      steps.walk = ownChildren();
      steps.quiet = spawnedSinceLook();
    `);
    expect(steps).toEqual({ flagged: true, walk: [], quiet: false });
  });

  it('a worker thread makes the watch blind: its own child is still found', async () => {
    const { steps } = await probe(`
      const { Worker } = await import('node:worker_threads');
      ownChildren();
      // The eval runs as ESM (the process was started with --input-type=module).
      const worker = new Worker("const { spawn } = await import('node:child_process'); const { parentPort } = await import('node:worker_threads'); parentPort.postMessage(spawn('sleep', ['30'], { stdio: 'ignore' }).pid); setTimeout(() => {}, 30000);", { eval: true });
      const pid = await new Promise((resolve) => worker.once('message', resolve));
      steps.flagged = spawnedSinceLook();
      steps.found = ownChildren().includes(pid);
      steps.name = worker.constructor.name;
      process.kill(pid, 'SIGKILL');
      await worker.terminate();
    `);
    expect(steps).toEqual({ flagged: true, found: true, name: 'Worker' });
  });

  it('native code (process.dlopen) makes the watch blind for good', async () => {
    const { steps } = await probe(`
      ownChildren();
      try { process.dlopen({ exports: {} }, '/nonexistent/addon.node'); } catch {}
      ownChildren();
      steps.flagged = spawnedSinceLook();
    `);
    expect(steps).toEqual({ flagged: true });
  });

  it('is not installed where code was preloaded (--import): the cursor is used as before', async () => {
    const { watching, steps } = await probe(`
      ownChildren();
      steps.flagged = spawnedSinceLook();
    `, ['--import', 'data:text/javascript,']);
    expect(watching).toBe(false);
    expect(steps).toEqual({ flagged: true });
  });
});

import { readFileSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeRunner } from '../../../src/runners/index.js';
import { detectContainment, Sandbox } from '../../../src/sandbox/index.js';
import { fakeContext } from '../runners/fake-context.js';

// The launcher chain costs a program start per layer: at the namespace+cgroup level the
// namespace's init joins the cgroups itself (no shell layer of its own), and the artifact must
// still be inside every attempt cgroup from its start.
const host = detectContainment('auto');

/**
 * The environment of the launcher process `pid` once it is `unshare` (setpriv execs it in place),
 * which then waits for the artifact: read earlier, /proc/<pid>/environ may come from the exec in
 * between, whose new image has no environment yet (an empty read, seen under a loaded CI).
 * No event says an exec finished: looked at every 5 ms, for at most 10 s.
 */
async function settledEnviron(pid: number, unshare: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const exe = readlinkSync(`/proc/${pid}/exe`);
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
    if (exe === unshare && environ.length > 0) return environ;
    if (Date.now() > deadline) throw new Error(`launcher ${pid} is still ${exe} with ${environ.length} variables after 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
const strongest = host.level === 'namespace+cgroup';

describe.skipIf(!strongest)('launcher chain at the namespace+cgroup level', () => {
  it('has one shell (the namespace init) and hands it the cgroup.procs files', async () => {
    const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment: host });
    try {
      const argv = box.command(['/bin/true']);
      expect(argv.filter((arg) => arg === '/bin/sh')).toHaveLength(1);
      const init = argv.indexOf('rq-init');
      const separator = argv.indexOf('--', init);
      const files = argv.slice(init + 1, separator);
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) expect(file).toMatch(/\/cgroup\.procs$/);
      expect(argv.slice(separator + 1)).toEqual(['/bin/true']);
    } finally {
      await box.destroy();
    }
  });

  it('names its tools by absolute path, setpriv first (its death signal survives the execs after it)', async () => {
    const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment: host });
    try {
      const argv = box.command(['/bin/true']);
      expect(argv[0]).toBe(host.setpriv);
      expect(path.isAbsolute(argv[0])).toBe(true);
      const unshare = host.pidNamespace?.[0] ?? '';
      expect(path.isAbsolute(unshare)).toBe(true);
      expect(argv).toContain(unshare);
    } finally {
      await box.destroy();
    }
  });

  it("runs the launcher with LC_ALL=C (no locale files read per tool) and the artifact with exactly its own environment", async () => {
    const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment: host });
    try {
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
      // The artifact prints its environment once stdin closes, so the launcher can be looked at first.
      const artifact = "process.stdin.resume(); process.stdin.on('end', () => console.log(JSON.stringify(process.env)));";
      const child = box.spawn([process.execPath, '-e', artifact], { cwd: box.dir, env });
      const launcherEnv = await settledEnviron(child.pid as number, realpathSync(host.pidNamespace?.[0] ?? ''));
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const closed = new Promise((resolve) => child.once('close', resolve));
      child.stdin?.end();
      await closed;
      expect(launcherEnv.sort()).toEqual(['LANG=C.UTF-8', 'LC_ALL=C', `PATH=${env.PATH}`]);
      expect(JSON.parse(out)).toEqual(env);
    } finally {
      await box.destroy();
    }
  });

  it('an LC_ALL of the artifact\'s own (a secret of that name) reaches it unchanged', async () => {
    const printEnv = 'console.log(JSON.stringify(Object.keys(process.env).sort()));';
    const out = await codeRunner({ entrypoint: 'main.js' })(printEnv, { id: 't' }, fakeContext({ memoryMb: 256, secrets: { LC_ALL: 'C.UTF-8' } }));
    expect(JSON.parse(out.stdout)).toEqual(['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']);
  });

  it('the artifact runs inside the attempt cgroup of every hierarchy, named like its work directory', async () => {
    const artifact = "const fs = require('fs'); console.log(JSON.stringify({ dir: require('path').basename(process.cwd()), cgroups: fs.readFileSync('/proc/self/cgroup', 'utf8') }));";
    const out = await codeRunner({ entrypoint: 'main.js' })(artifact, { id: 't' }, fakeContext({ memoryMb: 256 }));
    const { dir, cgroups } = JSON.parse(out.stdout) as { dir: string; cgroups: string };
    const lines = cgroups.split('\n').filter(Boolean);
    const inAttempt = (controller: string): boolean =>
      lines.some((line) => (host.cgroup?.version === 2 ? line.startsWith('0::') : line.split(':')[1]?.split(',').includes(controller)) && line.endsWith(`/${dir}`));
    expect(inAttempt('memory')).toBe(true);
    expect(inAttempt('pids')).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { codeRunner } from '../../../src/runners/index.js';
import { detectContainment, Sandbox } from '../../../src/sandbox/index.js';
import { fakeContext } from '../runners/fake-context.js';

// The launcher chain costs a program start per layer: at the namespace+cgroup level the
// namespace's init joins the cgroups itself (no shell layer of its own), and the artifact must
// still be inside every attempt cgroup from its start.
const host = detectContainment('auto');
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

import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { INSTALL_SYSTEM_DEPS, requireTool } from '../../helpers/system-tool.js';

// scripts/install-system-deps.sh is the one list of Debian packages the tests need (.ci/run
// calls it; issue 31: on a fresh machine promtool was missing and nothing said how to get it).
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SCRIPT = readFileSync(path.join(ROOT, INSTALL_SYSTEM_DEPS), 'utf8');

/** The packages of the script's PACKAGES list. */
function scriptPackages(): Set<string> {
  const list = /PACKAGES=\(\n([\s\S]*?)\n\)/.exec(SCRIPT)?.[1] ?? '';
  return new Set([...list.matchAll(/^\s*"([a-z0-9.+-]+) [^"]+"/gm)].map((match) => match[1] as string));
}

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? testFiles(file) : /\.(ts|mjs)$/.test(name) ? [file] : [];
  });
}

describe('scripts/install-system-deps.sh', () => {
  it('lists every Debian package a test names as the home of a missing tool', () => {
    const packages = scriptPackages();
    expect(packages.has('prometheus')).toBe(true);
    const self = fileURLToPath(import.meta.url);
    const named = testFiles(path.join(ROOT, 'test')).filter((file) => file !== self).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:missingToolMessage|requireTool)\('[^']+', '([^']+)'/g)].map((match) => ({ file, pkg: match[1] as string })),
    );
    expect(named.length).toBeGreaterThan(0);
    for (const { file, pkg } of named) expect(packages.has(pkg), `${path.relative(ROOT, file)} names ${pkg}`).toBe(true);
  });

  it('is what .ci/run calls to install system packages (no apt-get of its own)', () => {
    const ci = readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8');
    expect(ci).toContain(`bash ${INSTALL_SYSTEM_DEPS}`);
    expect(ci).not.toMatch(/apt-get install/);
  });

  it('a missing tool fails with the script to run, never a skip', () => {
    expect(() => requireTool('rq-no-such-tool', 'rq-no-such-package')).toThrow(
      'rq-no-such-tool is not installed (Debian package rq-no-such-package): run scripts/install-system-deps.sh, which installs every package the tests need',
    );
    expect(requireTool(process.execPath, 'nodejs')).toBe(process.execPath);
  });
});

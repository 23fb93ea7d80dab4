import { spawnSync } from 'node:child_process';

/** The one command that installs every Debian package the tests need (also run by .ci/run). */
export const INSTALL_SYSTEM_DEPS = 'scripts/install-system-deps.sh';

/**
 * The message of a test whose system tool is missing: the tool, its Debian package and the
 * script that installs it. A missing tool fails the test with it; it is never skipped (issue
 * 31: on a fresh machine two promtool tests failed, and a skip would have hidden them).
 */
export function missingToolMessage(tool: string, debianPackage: string): string {
  return `${tool} is not installed (Debian package ${debianPackage}): run ${INSTALL_SYSTEM_DEPS}, which installs every package the tests need`;
}

/**
 * Checks that `tool` can be run (`tool --version`, or `probeArgs`) and returns its path-free name.
 * @throws Error with {@link missingToolMessage} when it is not on PATH.
 */
export function requireTool(tool: string, debianPackage: string, probeArgs: readonly string[] = ['--version']): string {
  const probe = spawnSync(tool, [...probeArgs], { stdio: 'ignore' });
  if (probe.error && (probe.error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(missingToolMessage(tool, debianPackage));
  return tool;
}

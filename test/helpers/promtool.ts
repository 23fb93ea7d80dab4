import { spawnSync } from 'node:child_process';
import { missingToolMessage } from './system-tool.js';

/**
 * Runs `promtool check metrics` (Prometheus' own linter, Debian package `prometheus`, installed
 * by scripts/install-system-deps.sh) on a scrape; returns its exit status and what it printed.
 * @throws Error saying how to install promtool when it is not on PATH (a missing tool must fail
 *   the test, never skip it).
 */
export function promtoolCheck(scrape: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
  if (result.error && (result.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error(missingToolMessage('promtool', 'prometheus'));
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The value of one sample line `name{labels} value` of a scrape, or undefined when absent. */
export function sample(scrape: string, series: string): number | undefined {
  for (const line of scrape.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Environment variable holding the image id (e.g. a container digest) that enters the fingerprint. */
export const IMAGE_ID_ENV = 'ROLLOUT_QUEUE_IMAGE_ID';

/** What a worker's environment fingerprint is computed from (all strings; `null` when absent). */
export interface FingerprintInputs {
  /** `version` of rollout-queue's package.json. */
  readonly rolloutQueue: string;
  /** `process.versions.node`. */
  readonly node: string;
  /** `python3 --version` output (`Python 3.11.2`), `null` when there is no python3 on PATH. */
  readonly python: string | null;
  /** env `ROLLOUT_QUEUE_IMAGE_ID`, `null` when unset. */
  readonly imageId: string | null;
}

/** Reads the fingerprint inputs of this process's environment (runs `python3 --version` once, 5 s at most). */
export function fingerprintInputs(env: NodeJS.ProcessEnv = process.env): FingerprintInputs {
  const pkgPath = fileURLToPath(new URL('../../package.json', import.meta.url));
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { version?: string };
  const py = spawnSync('python3', ['--version'], { encoding: 'utf8', timeout: 5000 });
  const python = py.status === 0 ? `${py.stdout}${py.stderr}`.trim() || null : null;
  return { rolloutQueue: pkg.version ?? 'unknown', node: process.versions.node, python, imageId: env[IMAGE_ID_ENV] || null };
}

/**
 * The environment fingerprint of a worker: `sha256:<hex>` of the canonical JSON of
 * {@link FingerprintInputs} (keys in the order of that type). Two workers with the same package
 * version, node and python versions and image id have the same fingerprint. A spec naming
 * `sandbox.fingerprint` runs only on a worker with exactly that fingerprint (computed, or given
 * with `worker --fingerprint`).
 */
export function environmentFingerprint(inputs: FingerprintInputs): string {
  const canonical = JSON.stringify({ rolloutQueue: inputs.rolloutQueue, node: inputs.node, python: inputs.python, imageId: inputs.imageId });
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

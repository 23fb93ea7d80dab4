import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's root directory (where package.json, bin/ and examples/ are), from `dist/cli/paths.js`. */
export function packageRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}

/** The launcher `bin/rollout-queue.js`, for spawning worker processes. */
export function binPath(): string {
  return path.join(packageRoot(), 'bin', 'rollout-queue.js');
}

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

/** A package this worker has outside the range a spec's `sandbox.requires` asks for. */
export interface VersionSkew {
  /** npm package name, a key of `sandbox.requires`. */
  readonly package: string;
  /** The spec's semver range for it. */
  readonly range: string;
  /** The version this worker has installed, `null` when the package is not installed. */
  readonly installed: string | null;
}

const OWN_NAME = 'rollout-queue';
const require = createRequire(import.meta.url);
// A worker's install does not change under a running process: read each package.json once.
const versions = new Map<string, string | null>();

/** `version` of `name`'s package.json in this worker's own install, `null` when absent. */
function installedVersion(name: string): string | null {
  if (versions.has(name)) return versions.get(name) ?? null;
  let file: string | undefined;
  if (name === OWN_NAME) {
    file = fileURLToPath(new URL('../../package.json', import.meta.url));
  } else {
    // Node's own lookup order for a bare name from this file; reading `<dir>/<name>/package.json`
    // directly works for packages whose `exports` hide their package.json.
    file = (require.resolve.paths(name) ?? []).map((dir) => path.join(dir, name, 'package.json')).find((candidate) => existsSync(candidate));
  }
  let version: string | null = null;
  if (file) {
    try {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
      version = typeof pkg.version === 'string' ? pkg.version : null;
    } catch {
      version = null;
    }
  }
  versions.set(name, version);
  return version;
}

/**
 * The first entry of a spec's `sandbox.requires` (package name → node-semver range) that this
 * worker does not satisfy, or `null` when it satisfies all (or `requires` is absent).
 * `rollout-queue` is read from this package's own package.json, any other package from the
 * worker's install as Node resolves it from here. Prereleases satisfy a range only as
 * node-semver says (`includePrerelease: false`, https://github.com/npm/node-semver#prerelease-tags).
 */
export function findVersionSkew(requires: Readonly<Record<string, string>> | undefined): VersionSkew | null {
  if (!requires) return null;
  for (const [name, range] of Object.entries(requires)) {
    const installed = installedVersion(name);
    if (installed === null || !semver.satisfies(installed, range)) return { package: name, range, installed };
  }
  return null;
}

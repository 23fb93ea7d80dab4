/** PATH given to the artifact when the worker itself has none. */
export const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Variables the runner sets itself; a secret of the same name does not override them. */
export const RESERVED_ENV_NAMES: readonly string[] = ['PATH', 'HOME', 'LANG', 'TMPDIR'];

/**
 * The artifact's whole environment: the named secrets, then `PATH` (the program's PATH in the
 * tenant view, `view.path`: the interpreters' bin directories, then the system's; without one,
 * the worker's), `HOME` (its work dir), `TMPDIR` (its /tmp in the tenant view, else the work
 * dir, so stray files are removed with it) and `LANG=C.UTF-8`. Nothing else from the worker's
 * environment reaches the artifact; in the tenant view bubblewrap adds `PWD` (its work dir).
 */
export function childEnv(view: { readonly workDir: string; readonly tmpDir: string; readonly path: string | undefined }, secrets: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(secrets)) {
    if (!RESERVED_ENV_NAMES.includes(name)) env[name] = value;
  }
  env.PATH = view.path ?? process.env.PATH ?? FALLBACK_PATH;
  env.HOME = view.workDir;
  env.LANG = 'C.UTF-8';
  env.TMPDIR = view.tmpDir;
  return env;
}

/** Re-exported from the wire contract, where the worker's reply path uses it too. */
export { redactSecrets } from '../spec/redact-secrets.js';

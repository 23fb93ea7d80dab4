import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CallerError, ModelError } from '../spec/errors.js';
import { isPlainObject } from '../spec/json-data.js';
import type { Rendered, RolloutContext } from '../spec/index.js';
import { normalizeRelativePath } from './relative-path.js';

/** The artifact's files: normalized relative path → content (text, or bytes for a copied work dir). */
export type ArtifactFiles = ReadonlyMap<string, string | Uint8Array>;

/** The error type of a bad file inside `rendered.files` (a `model` Result). */
export const BAD_RENDERED_FILE = 'BadRenderedFile';

/**
 * Turns `rendered` into the files to write. A string becomes the entrypoint's content;
 * `{ files }` is checked path by path.
 *
 * In RL and evolution `rendered` is written by the model, so what is wrong inside
 * `rendered.files` is the model's failure and must not stop the run (fresh-user report: a
 * `"../evil.py"` ended `caller` and stopped it).
 * @throws ModelError `BadRenderedFile` for a path that is empty, absolute, escapes with `..`,
 *   names a directory, collides with another path after normalization, or is both a file and a
 *   parent directory of another file, and for a content that is not text.
 * @throws CallerError for a `rendered` of another shape (the caller's envelope, not the model's files).
 */
export function artifactFiles(rendered: Rendered, entrypoint: string): ReadonlyMap<string, string> {
  if (typeof rendered === 'string') return new Map([[entrypoint, rendered]]);
  const files: unknown = isPlainObject(rendered) && 'files' in rendered ? rendered.files : undefined;
  if (!isPlainObject(files)) {
    throw new CallerError('codeRunner: rendered must be a string or { "files": { "<relative path>": "<content>" } }');
  }
  const result = new Map<string, string>();
  for (const [raw, content] of Object.entries(files)) {
    const checked = normalizeRelativePath(raw);
    if ('problem' in checked) throw badFile(`rendered.files path ${JSON.stringify(raw)} ${checked.problem}`);
    if (typeof content !== 'string') throw badFile(`rendered.files[${JSON.stringify(raw)}] must be the file's text, got ${typeof content}`);
    if (result.has(checked.path)) throw badFile(`rendered.files has two paths for ${JSON.stringify(checked.path)}; keep one`);
    result.set(checked.path, content);
  }
  for (const file of result.keys()) {
    for (let dir = path.dirname(file); dir !== '.'; dir = path.dirname(dir)) {
      if (result.has(dir)) {
        throw badFile(`rendered.files has ${JSON.stringify(dir)} both as a file and as the directory of ${JSON.stringify(file)}`);
      }
    }
  }
  return result;
}

function badFile(problem: string): ModelError {
  return new ModelError(BAD_RENDERED_FILE, `codeRunner: ${problem}; the artifact was not run`);
}

/** Replaces characters unsafe in a file name and bounds the length. */
function namePart(value: string, maxLength: number): string {
  return value.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, maxLength) || '_';
}

/**
 * The start of an attempt's sandbox name: `<leaseId>.<runAttemptId>.a<attempt>`, unsafe
 * characters replaced, so its directory sorts and greps by lease.
 */
export function attemptName(ctx: Pick<RolloutContext, 'leaseId' | 'runAttemptId' | 'attempt'>): string {
  return `${namePart(ctx.leaseId, 120)}.${namePart(ctx.runAttemptId, 60)}.a${ctx.attempt}`;
}

/**
 * Writes the artifact's files into `dir`, creating parent directories. The file at
 * `executable` gets mode 0755 (so a script with a `#!` line can be run directly), the rest
 * 0644. Files are created exclusively (`wx`), never through an existing entry. With `owner`
 * (the attempt's uid and gid, when the worker is root and drops the attempt to another uid),
 * every file and directory made is chowned to it, so the program may change its own files.
 * Synchronous: a few small files cost less written on the calling thread than through the
 * thread pool (three round trips per file with the promise API).
 * @throws the file-system error (disk full, no permission, an entry already there).
 */
export function writeArtifact(dir: string, files: ArtifactFiles, executable: string, owner?: { readonly uid: number; readonly gid: number }): void {
  for (const [relPath, content] of files) {
    const target = path.join(dir, relPath);
    if (path.dirname(relPath) !== '.') {
      const made = mkdirSync(path.dirname(target), { recursive: true });
      if (owner && made !== undefined) {
        for (let sub = path.dirname(target); sub.length >= made.length; sub = path.dirname(sub)) chownSync(sub, owner.uid, owner.gid);
      }
    }
    writeFileSync(target, content, { flag: 'wx', mode: relPath === executable ? 0o755 : 0o644 });
    if (owner) chownSync(target, owner.uid, owner.gid);
  }
}

import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ModelError } from '../spec/errors.js';

/** Most bytes of a run's work dir copied for a reward that sees it (`seeWorkDir`): 16 MiB. */
export const MAX_WORK_DIR_COPY_BYTES = 16 * 1024 * 1024;
/** Most files copied. */
export const MAX_WORK_DIR_COPY_FILES = 1000;

/**
 * The regular files under `dir` (relative path → bytes), for a reward that asked to see the run's
 * work dir: read after the program ended, before its sandbox is destroyed. Symbolic links, devices
 * and sockets are skipped (a link could name a file of the worker's).
 * @throws ModelError (`WorkDirTooLarge`) past {@link MAX_WORK_DIR_COPY_FILES} files or
 *   {@link MAX_WORK_DIR_COPY_BYTES} bytes: the program left more than a reward is handed.
 */
export function copyWorkDir(dir: string): ReadonlyMap<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  let bytes = 0;
  const visit = (sub: string): void => {
    for (const entry of readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub === '' ? entry.name : `${sub}/${entry.name}`;
      if (entry.isDirectory()) {
        visit(rel);
        continue;
      }
      if (!entry.isFile()) continue;
      const size = lstatSync(path.join(dir, rel)).size;
      bytes += size;
      if (files.size >= MAX_WORK_DIR_COPY_FILES || bytes > MAX_WORK_DIR_COPY_BYTES) {
        throw new ModelError(
          'WorkDirTooLarge',
          `the artifact left more than ${MAX_WORK_DIR_COPY_FILES} files or ${MAX_WORK_DIR_COPY_BYTES} bytes in its work dir, which the reward (seeWorkDir) is handed; keep what the reward reads small`,
        );
      }
      files.set(rel, readFileSync(path.join(dir, rel)));
    }
  };
  visit('');
  return files;
}

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ModelError } from '../../spec/index.js';
import type { HarnessArtifactWriter } from './harness-shapes.js';

/** What the artifact writer collected: UTF-8 files by relative path, and which of them hold base64 of binary content. */
export interface CollectedFiles {
  readonly files: Record<string, string>;
  readonly binary: string[];
}

/** `a//b` → `a/b`; refuses what would leave the dispatch's directory. */
function artifactPath(raw: unknown): string {
  const normalized = typeof raw === 'string' && raw !== '' && !raw.includes('\0') && !path.isAbsolute(raw) ? path.posix.normalize(raw) : '';
  if (normalized === '' || normalized === '.' || normalized.startsWith('../') || normalized === '..' || normalized.endsWith('/')) {
    throw new ModelError('BadArtifactPath', `ctx.artifacts.write: path ${JSON.stringify(raw)} must be a relative file path inside the run dir, like "logs/trace.txt"`);
  }
  return normalized;
}

/**
 * The artifact writer of one Dispatch attempt on the worker, in the harness' shape: `write(path,
 * content)` (a string, or bytes) stores the file under a directory of this attempt in the
 * system temp dir and resolves to its full path there; `writeJson(path, value)` writes
 * `JSON.stringify(value, null, 2)`. Every file's content also travels back with the Result, at
 * most `maxBytes` in all (a path written again counts once, with its last content), else
 * `ModelError('ArtifactsTooLarge')`. `remove()` deletes the directory (the harness keeps such
 * files in worker storage; here a worker would fill its disk, and the content has left with the Result).
 */
export function workerArtifacts(maxBytes: number): { artifacts: HarnessArtifactWriter; collected: CollectedFiles; remove(): Promise<void> } {
  const collected: CollectedFiles = { files: {}, binary: [] };
  const sizes = new Map<string, number>();
  let total = 0;
  let dir: Promise<string> | undefined;
  const write = async (rawPath: string, content: string | Uint8Array): Promise<string> => {
    const where = artifactPath(rawPath);
    const binary = content instanceof Uint8Array;
    if (!binary && typeof content !== 'string') throw new ModelError('BadArtifact', `ctx.artifacts.write(${JSON.stringify(where)}): content must be a string or a Uint8Array, got ${content === null ? 'null' : typeof content}`);
    const bytes = binary ? content.byteLength : Buffer.byteLength(content);
    const next = total - (sizes.get(where) ?? 0) + bytes;
    if (next > maxBytes) {
      throw new ModelError('ArtifactsTooLarge', `ctx.artifacts.write(${JSON.stringify(where)}): the dispatch's files would be ${next} bytes, over dispatchRunner's maxArtifactBytes ${maxBytes}; write large data to shared storage and return its key, or raise maxArtifactBytes`);
    }
    total = next;
    sizes.set(where, bytes);
    collected.files[where] = binary ? Buffer.from(content).toString('base64') : content;
    const at = collected.binary.indexOf(where);
    if (binary && at < 0) collected.binary.push(where);
    if (!binary && at >= 0) collected.binary.splice(at, 1);
    dir ??= mkdtemp(path.join(os.tmpdir(), 'rq-dispatch-'));
    const full = path.join(await dir, where);
    await mkdir(path.dirname(full), { recursive: true });
    await writeFile(full, content);
    return full;
  };
  return {
    artifacts: { write, writeJson: (rawPath, value) => write(rawPath, JSON.stringify(value, null, 2)) },
    collected,
    remove: async () => {
      if (dir) await rm(await dir.catch(() => ''), { recursive: true, force: true }).catch(() => undefined);
    },
  };
}

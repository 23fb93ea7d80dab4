import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyWorkDir, MAX_WORK_DIR_COPY_FILES } from '../../../src/runners/work-dir-copy.js';
import { ModelError } from '../../../src/spec/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-copy-'));
  dirs.push(dir);
  return dir;
}

describe('copyWorkDir (a reward with seeWorkDir gets what the run left)', () => {
  it('copies regular files at any depth, bytes as they are; skips links (they could name the worker\'s files)', () => {
    const dir = scratch();
    mkdirSync(path.join(dir, 'out', 'deep'), { recursive: true });
    writeFileSync(path.join(dir, 'main.py'), 'print(1)\n');
    writeFileSync(path.join(dir, 'out', 'deep', 'blob.bin'), Buffer.from([0, 255, 1]));
    symlinkSync('/etc/passwd', path.join(dir, 'passwd'));
    const files = copyWorkDir(dir);
    expect([...files.keys()].sort()).toEqual(['main.py', 'out/deep/blob.bin']);
    expect(Buffer.from(files.get('out/deep/blob.bin') as Uint8Array)).toEqual(Buffer.from([0, 255, 1]));
  });

  it('refuses a work dir of more files than a reward is handed: model / WorkDirTooLarge', () => {
    const dir = scratch();
    for (let i = 0; i <= MAX_WORK_DIR_COPY_FILES; i++) writeFileSync(path.join(dir, `f${i}`), '');
    let thrown: unknown;
    try {
      copyWorkDir(dir);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ModelError);
    expect((thrown as ModelError).type).toBe('WorkDirTooLarge');
  });
});

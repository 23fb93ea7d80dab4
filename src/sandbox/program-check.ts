import { accessSync, closeSync, constants, openSync, readSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';

/** An error shaped like the one `child_process.spawn` emits (`code`, `syscall`, `path`). */
function spawnError(code: 'ENOENT' | 'EACCES', program: string, detail: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`spawn ${program} ${code}${detail ? ` (${detail})` : ''}`), { code, errno: code === 'ENOENT' ? -2 : -13, syscall: `spawn ${program}`, path: program });
}

/** `stat` of `file`, or undefined when it cannot be had; a missing file throws nothing (every PATH miss is one). */
function statOf(file: string): Stats | undefined {
  try {
    return statSync(file, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

function executableFile(file: string, stats: Stats | undefined = statOf(file)): boolean {
  if (!stats?.isFile()) return false;
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The interpreter a `#!` line names, or undefined when the file does not start with one. */
function shebangInterpreter(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(256);
    const n = readSync(fd, head, 0, head.length, 0);
    const text = head.subarray(0, n).toString('latin1');
    if (!text.startsWith('#!')) return undefined;
    return text.slice(2).split('\n')[0]?.trim().split(/[ \t]/)[0] || undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The first executable file named `program` in the directories of `pathVar` (`:`-separated), as
 * `execvp` would find it, or undefined.
 */
export function findOnPath(program: string, pathVar: string): string | undefined {
  return pathVar.split(':').filter(Boolean).map((dir) => path.join(dir, program)).find((file) => executableFile(file));
}

/**
 * Checks, before a sandbox launcher starts, what `execve` of `program` would refuse: a
 * sandboxed program is exec'd by `unshare`/`setpriv`/`prlimit`/`sh`, where a failure is only
 * an exit code 126/127, so the errors a direct spawn gives (ENOENT for a missing program or
 * `#!` interpreter, EACCES for a file that is not executable) are raised here instead.
 * A program without `/` is looked up on `pathVar`; one with `/` is taken relative to `cwd`.
 * @throws an error with `code` ENOENT or EACCES, like `spawn`'s.
 */
export function checkProgram(program: string, pathVar: string, cwd: string): void {
  let file: string | undefined;
  if (program.includes('/')) {
    file = path.resolve(cwd, program);
    const stats = statOf(file);
    if (!stats) throw spawnError('ENOENT', program, '');
    if (!executableFile(file, stats)) throw spawnError('EACCES', program, '');
  } else {
    file = findOnPath(program, pathVar);
    if (!file) throw spawnError('ENOENT', program, '');
  }
  const interpreter = shebangInterpreter(file);
  if (interpreter && interpreter.startsWith('/') && !executableFile(interpreter)) {
    throw spawnError('ENOENT', program, `its #! interpreter ${interpreter} is missing or not executable`);
  }
}

import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { findOnPath } from './program-check.js';

/** What a tenant needs of the interpreters installed for the worker's user. */
export interface InterpreterPaths {
  /** Host directories the interpreters live in (installation prefixes, a venv), exposed read-only. */
  readonly prefixes: readonly string[];
  /** Their `bin` directories, first on the tenant's PATH, so `python3` is the worker's own python3. */
  readonly binDirs: readonly string[];
}

/** Prints python3's installation as JSON: a venv's prefix, its base installation and the interpreter. */
const PYTHON_PROBE = 'import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable]))';

function real(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * Where `python3` (first on `pathVar`, as the worker's user gets it) really lives: a pyenv shim
 * is a bash script that runs the interpreter of another directory, so the answer comes from the
 * interpreter itself (`sys.prefix`, `sys.base_prefix`, `sys.executable`), asked once. A venv
 * keeps its own bin directory on the PATH (its pyvenv.cfg selects its site-packages).
 */
function python3Paths(pathVar: string): InterpreterPaths {
  const python3 = findOnPath('python3', pathVar);
  if (!python3) return { prefixes: [], binDirs: [] };
  const answer = spawnSync(python3, ['-c', PYTHON_PROBE], { encoding: 'utf8', timeout: 20_000, env: { PATH: pathVar, HOME: process.env.HOME ?? '/' } });
  let fields: unknown;
  try {
    fields = JSON.parse(answer.stdout.trim());
  } catch {
    return { prefixes: [], binDirs: [] };
  }
  if (!Array.isArray(fields) || !fields.every((field): field is string => typeof field === 'string' && path.isAbsolute(field))) return { prefixes: [], binDirs: [] };
  const [prefix, basePrefix, execPrefix, baseExecPrefix, executable] = fields as [string, string, string, string, string];
  const binary = real(executable);
  return {
    prefixes: [prefix, basePrefix, execPrefix, baseExecPrefix, path.dirname(path.dirname(binary))].map(real),
    binDirs: [path.dirname(executable)],
  };
}

/** This process' node: codeRunner runs `.js` entrypoints with it (`process.execPath`). */
function nodePaths(): InterpreterPaths {
  const binary = real(process.execPath);
  return { prefixes: [path.dirname(path.dirname(binary))], binDirs: [path.dirname(process.execPath)] };
}

let cached: { readonly pathVar: string; readonly paths: InterpreterPaths } | undefined;

/**
 * The interpreters a tenant program runs with, found once per process for `pathVar` (the
 * worker's PATH): python3 (the one the worker's user gets, through a pyenv shim or a venv
 * included) and this process' node. Asking python3 costs one interpreter start (~0.1 s).
 */
export function detectInterpreters(pathVar: string): InterpreterPaths {
  if (cached?.pathVar === pathVar) return cached.paths;
  const found = [python3Paths(pathVar), nodePaths()];
  const paths = {
    prefixes: [...new Set(found.flatMap((f) => f.prefixes))],
    binDirs: [...new Set(found.flatMap((f) => f.binDirs))],
  };
  cached = { pathVar, paths };
  return paths;
}

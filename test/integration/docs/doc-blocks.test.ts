import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { REPO_ROOT, uniquePrefix } from '../cli/cli-process.js';
import { flagsOf, parseCliLine } from './cli-parse.js';
import { anchorsOf, cliArguments, docBlocksOf, readDocBlocks, shellCommands, where, type DocBlock } from './doc-blocks.js';

// Issue 31: every code block a user may copy from README, docs/ and the examples' READMEs is
// checked here by its language, so a doc that drifts from the code fails `npm test`:
// - ts: compiles under strict + noUncheckedIndexedAccess (and the other strict-family flags that
//   are about correctness, not style), against this package's published types;
// - js: parses as an ES module (node --check);
// - bash/sh: every `rollout-queue …` / `npx rollout-queue …` / `node bin/rollout-queue.js …` line
//   parses with the CLI's real command declarations (actions stubbed), `npm run X` names a script,
//   `bash FILE` a file; README's "Run your own tasks" block runs for real against a private Redis;
// - json parses; python compiles (py_compile); yaml parses;
// - a plain-text block (no language: usage synopses) names only flags its command has;
// - a block marked `<!-- doc-example: NAME (run by PATH) -->` names a test that reads it;
// - a block that cannot be checked says why in its info string (```ts no-run: <reason>).
// Relative links between these pages resolve, anchors included.

const PAGES = ['README.md', ...readdirSync(path.join(REPO_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`), ...readdirSync(path.join(REPO_ROOT, 'examples')).map((name) => `examples/${name}/README.md`).filter((file) => existsSync(path.join(REPO_ROOT, file)))];
const BLOCKS = PAGES.flatMap((file) => readDocBlocks(REPO_ROOT, file));
/** Not code: output, diagrams, usage synopses, another tool's config. Their `rollout-queue` usage lines are still checked. */
const TEXT_LANGUAGES = new Set(['', 'text', 'console', 'output', 'conf', 'ini']);
const CHECKED_LANGUAGES = new Set([...TEXT_LANGUAGES, 'ts', 'js', 'bash', 'sh', 'json', 'python', 'yaml']);
/** Pages other helpers of issue 33 are writing at the same time; a link to one is checked once it exists. */
const PAGES_BEING_WRITTEN = new Set(['docs/redis-trouble.md', 'docs/fair-share.md']);
const SCRATCH = path.join(REPO_ROOT, '.rollout-queue', `doc-blocks-${process.pid}`);

const runnable = (language: string): DocBlock[] => BLOCKS.filter((block) => block.language === language && block.noRun === undefined);

afterAll(() => {
  rmSync(SCRATCH, { recursive: true, force: true });
});

/** Problems of each kind of block; the helpers are also fed broken blocks below, so they can fail. */
function blockProblems(block: DocBlock): string[] {
  if (!CHECKED_LANGUAGES.has(block.language) && !block.example?.runBy) return [`${where(block)}: no check knows \`\`\`${block.language}; use one of ${[...CHECKED_LANGUAGES].filter(Boolean).join(', ')}, name the test that runs it (<!-- doc-example: NAME (run by test/…) -->), or mark it no-run: <reason>`];
  if (block.noRun !== undefined && block.noRun.length < 10) return [`${where(block)}: a no-run block says why (\`\`\`${block.language} no-run: <reason>)`];
  if (block.noRun !== undefined) return [];
  switch (block.language) {
    case 'bash':
    case 'sh':
      return shellProblems(block);
    case 'json':
      return jsonProblems(block);
    case 'yaml':
      return yamlProblems(block);
    default:
      return TEXT_LANGUAGES.has(block.language) ? synopsisProblems(block) : [];
  }
}

function shellProblems(block: DocBlock): string[] {
  const problems: string[] = [];
  const scripts = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  for (const command of shellCommands(block.body)) {
    const args = cliArguments(command);
    if (args) {
      const outcome = parseCliLine(args);
      if (!outcome.ok) problems.push(`${where(block)}: \`${command.source}\` does not parse: ${outcome.error}`);
      continue;
    }
    const [first, second, third] = command.words;
    if (first === 'npm' && second === 'run' && third !== undefined && !(third in scripts)) problems.push(`${where(block)}: \`${command.source}\` names no script of package.json`);
    if (first === 'npm' && second === 'test' && !('test' in scripts)) problems.push(`${where(block)}: package.json has no test script`);
    if (first === 'bash' && second !== undefined && !second.startsWith('-') && !existsSync(path.join(REPO_ROOT, second))) problems.push(`${where(block)}: \`${command.source}\`: ${second} does not exist`);
  }
  return problems;
}

function jsonProblems(block: DocBlock): string[] {
  try {
    JSON.parse(block.body);
    return [];
  } catch (err) {
    return [`${where(block)}: not JSON: ${(err as Error).message}`];
  }
}

function yamlProblems(block: DocBlock): string[] {
  try {
    parseYaml(block.body);
    return [];
  } catch (err) {
    return [`${where(block)}: not YAML: ${(err as Error).message}`];
  }
}

/** Usage lines of plain-text blocks (`rollout-queue run --tasks FILE …`) name only flags their command has. */
function synopsisProblems(block: DocBlock): string[] {
  const problems: string[] = [];
  for (const line of block.body.split('\n')) {
    for (const usage of line.matchAll(/(?:^|\s{2,})rollout-queue ([a-z]+)(?=\s|$)((?:(?!\s{2,}rollout-queue ).)*)/g)) {
      const flags = flagsOf(usage[1] ?? '');
      if (!flags) {
        problems.push(`${where(block)}: \`rollout-queue ${usage[1]}\` is no command`);
        continue;
      }
      for (const flag of (usage[2] ?? '').match(/--[a-z][a-z-]*/g) ?? []) if (!flags.has(flag)) problems.push(`${where(block)}: \`rollout-queue ${usage[1]}\` has no ${flag}`);
    }
  }
  return problems;
}

/** Type errors of `blocks` compiled as modules against the published types, one message per error. */
function typeErrors(blocks: readonly DocBlock[], options: { dir: string; strictest?: boolean }): string[] {
  mkdirSync(options.dir, { recursive: true });
  const files = new Map<string, DocBlock>();
  for (const block of blocks) {
    const file = path.join(options.dir, `${block.file.replace(/[^\w]+/g, '-')}-${block.line}.mts`);
    // `export {}` makes a block without imports a module too (top-level await, own scope).
    writeFileSync(file, `${block.body}\nexport {};\n`);
    files.set(file, block);
  }
  const program = ts.createProgram([...files.keys()], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitReturns: true,
    noImplicitOverride: true,
    noFallthroughCasesInSwitch: true,
    // @tsconfig/strictest's remaining flags, for README's library example: the others are
    // fragments (an unused `artifact`, `process.env.X`), which these style rules would refuse.
    ...(options.strictest ? { exactOptionalPropertyTypes: true, noPropertyAccessFromIndexSignature: true, noUnusedLocals: true, noUnusedParameters: true, useUnknownInCatchVariables: true, allowUnreachableCode: false, allowUnusedLabels: false } : {}),
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const block = diagnostic.file ? files.get(diagnostic.file.fileName) : undefined;
    const line = diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1 : 0;
    const at = block ? `${block.file}:${block.line + line}` : (diagnostic.file?.fileName ?? '?');
    return `${at}: TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

function pythonProblems(blocks: readonly DocBlock[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return blocks.flatMap((block) => {
    const file = path.join(dir, `${block.file.replace(/[^\w]+/g, '_')}_${block.line}.py`);
    writeFileSync(file, block.body);
    const outcome = spawnSync('python3', ['-m', 'py_compile', file], { encoding: 'utf8' });
    if (outcome.error) throw new Error(`python3 is needed to check the docs' Python blocks (bash scripts/install-system-deps.sh): ${outcome.error.message}`);
    return outcome.status === 0 ? [] : [`${where(block)}: does not compile: ${outcome.stderr.trim()}`];
  });
}

function jsProblems(blocks: readonly DocBlock[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return blocks.flatMap((block) => {
    const file = path.join(dir, `${block.file.replace(/[^\w]+/g, '-')}-${block.line}.mjs`);
    writeFileSync(file, block.body);
    const outcome = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8' });
    return outcome.status === 0 ? [] : [`${where(block)}: does not parse: ${outcome.stderr.trim().split('\n').slice(0, 5).join(' ')}`];
  });
}

/** Relative links of `file` to a page or a heading that does not exist. */
function linkProblems(file: string): string[] {
  const markdown = readFileSync(path.join(REPO_ROOT, file), 'utf8').replace(/^ {0,3}(`{3,})[\s\S]*?^ {0,3}\1/gm, '');
  const problems: string[] = [];
  for (const link of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = link[1] ?? '';
    if (/^[a-z]+:/.test(target)) continue;
    const [pathPart, anchor] = target.split('#') as [string, string | undefined];
    const resolved = pathPart === '' ? file : path.normalize(path.join(path.dirname(file), pathPart));
    if (!existsSync(path.join(REPO_ROOT, resolved))) {
      if (!PAGES_BEING_WRITTEN.has(resolved)) problems.push(`${file}: link to ${target}: ${resolved} does not exist`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !anchorsOf(readFileSync(path.join(REPO_ROOT, resolved), 'utf8')).has(anchor)) problems.push(`${file}: link to ${target}: ${resolved} has no heading #${anchor}`);
  }
  return problems;
}

describe('code blocks of README, docs/ and the examples', () => {
  it('finds the pages and their blocks', () => {
    expect(PAGES).toContain('README.md');
    expect(PAGES).toContain('docs/cli.md');
    expect(runnable('ts').length).toBeGreaterThan(2);
    expect(runnable('bash').length + runnable('sh').length).toBeGreaterThan(5);
  });

  it('each block is of a language a check knows, and each no-run block says why', () => {
    const problems = BLOCKS.flatMap((block) => blockProblems(block).filter((problem) => / no check knows | says why /.test(problem)));
    expect(problems).toEqual([]);
  });

  it('every rollout-queue command line in a bash/sh block parses with the real CLI; npm scripts and files exist', () => {
    expect([...runnable('bash'), ...runnable('sh')].flatMap(shellProblems)).toEqual([]);
  });

  it('usage lines of plain-text blocks name only flags their command has', () => {
    expect(BLOCKS.filter((block) => TEXT_LANGUAGES.has(block.language)).flatMap(synopsisProblems)).toEqual([]);
  });

  it('ts blocks compile under strict and noUncheckedIndexedAccess against the published types', () => {
    expect(typeErrors(runnable('ts'), { dir: path.join(SCRATCH, 'ts') })).toEqual([]);
  });

  it("README's library example compiles under @tsconfig/strictest's settings", () => {
    const example = BLOCKS.filter((block) => block.file === 'README.md' && block.example?.name === 'library');
    expect(example).toHaveLength(1);
    expect(typeErrors(example, { dir: path.join(SCRATCH, 'strictest'), strictest: true })).toEqual([]);
  });

  it('js blocks parse as ES modules', () => {
    expect(jsProblems(runnable('js'), path.join(SCRATCH, 'js'))).toEqual([]);
  });

  it('json and yaml blocks parse; python blocks compile', () => {
    expect([...runnable('json').flatMap(jsonProblems), ...runnable('yaml').flatMap(yamlProblems), ...pythonProblems(runnable('python'), path.join(SCRATCH, 'py'))]).toEqual([]);
  });

  it('a block marked "run by" names a test that reads it', () => {
    const problems: string[] = [];
    for (const block of BLOCKS.filter((candidate) => candidate.example?.runBy)) {
      const test = path.join(REPO_ROOT, block.example?.runBy ?? '');
      if (!existsSync(test)) problems.push(`${where(block)}: ${block.example?.runBy} does not exist`);
      else if (!readFileSync(test, 'utf8').includes(`example: ${block.example?.name}`) && block.example?.runBy !== 'test/integration/docs/doc-blocks.test.ts') problems.push(`${where(block)}: ${block.example?.runBy} never reads "example: ${block.example?.name}"`);
    }
    expect(problems).toEqual([]);
  });

  it('relative links between the pages resolve, anchors included', () => {
    expect(PAGES.flatMap(linkProblems)).toEqual([]);
  });

  it('docs/README.md indexes every page of docs/, and README stays a front door (at most 250 lines)', () => {
    const index = readFileSync(path.join(REPO_ROOT, 'docs', 'README.md'), 'utf8');
    const pages = PAGES.filter((file) => file.startsWith('docs/') && file !== 'docs/README.md').map((file) => path.basename(file));
    expect(pages.filter((page) => !index.includes(`](${page})`))).toEqual([]);
    expect(readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });

  it('the checks fail on broken blocks (a doc that drifts is caught)', () => {
    const broken = docBlocksOf('broken.md', [
      '```bash',
      'rollout-queue run --tasks t.jsonl --artifact a.py --run x:y --reward x:y --concurrency 2',
      'node bin/rollout-queue.js worker --placement no-equals-sign',
      'npm run no-such-script',
      '```',
      '```json',
      '{"a": 1,}',
      '```',
      '```',
      'rollout-queue status [--jsn]',
      '```',
      '```ruby',
      'puts 1',
      '```',
      '```ts no-run: x',
      '```',
      '```ts',
      "import { ref } from 'rollout-queue';",
      'const xs = [1, 2];',
      'const n: number = xs[0];',
      "ref('rollout-queue/rewards:lastNumber', 42);",
      "ref('rollout-queue/runners:codeRunner', { entrypiont: 'main.py' });",
      '```',
      '```python',
      'def f(:',
      '```',
      '```js',
      'const = 1;',
      '```',
    ].join('\n'));
    const problems = broken.flatMap(blockProblems).join('\n');
    expect(problems).toMatch(/unknown option '--concurrency'/);
    expect(problems).toMatch(/--placement no-equals-sign/);
    expect(problems).toMatch(/npm run no-such-script` names no script/);
    expect(problems).toMatch(/not JSON/);
    expect(problems).toMatch(/rollout-queue status` has no --jsn/);
    expect(problems).toMatch(/no check knows ```ruby/);
    expect(problems).toMatch(/a no-run block says why/);
    const typeProblems = typeErrors(broken.filter((block) => block.language === 'ts' && block.noRun === undefined), { dir: path.join(SCRATCH, 'broken-ts') }).join('\n');
    expect(typeProblems).toMatch(/TS2322/); // xs[0] is number | undefined under noUncheckedIndexedAccess
    // ref() types a built-in's config by its target (src/typed-ref.ts): a config that is no
    // object has no properties in common with LastNumberOptions; a misspelt key is refused.
    expect(typeProblems).toMatch(/TS2559 Type '42' has no properties in common with type 'LastNumberOptions'/);
    expect(typeProblems).toMatch(/TS2561 .*'entrypiont' does not exist in type 'CodeRunnerOptions'/);
    expect(pythonProblems(broken.filter((block) => block.language === 'python'), path.join(SCRATCH, 'broken-py'))).toHaveLength(1);
    expect(jsProblems(broken.filter((block) => block.language === 'js'), path.join(SCRATCH, 'broken-js'))).toHaveLength(1);
  });
});

describe('README "Run your own tasks"', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it('runs as written: a worker, two Python rollouts scored by lastNumber, a results file, the worker stopped', async () => {
    const block = BLOCKS.find((candidate) => candidate.file === 'README.md' && candidate.example?.name === 'own-tasks');
    if (!block) throw new Error('README has no <!-- doc-example: own-tasks … --> block');
    // A directory of its own standing for the clone's root: bin/ is the real one (a symlink), so
    // `node bin/rollout-queue.js` is the CLI as a user runs it, and my-run/ lands here.
    const root = mkdtempSync(path.join(os.tmpdir(), 'rq-own-tasks-'));
    symlinkSync(path.join(REPO_ROOT, 'bin'), path.join(root, 'bin'));
    const env = { ...process.env, REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('owntasks'), LOG_LEVEL: 'warn' };
    try {
      // `wait` after the block: the test holds on until the worker it started has exited.
      const outcome = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn('bash', ['-e', '-c', `${block.body}wait\n`], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(outcome.code, outcome.stderr).toBe(0);
      const results = readFileSync(path.join(root, 'my-run', 'results.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { taskId: string; kind: string; reward: number });
      expect(results.map((result) => [result.taskId, result.kind, result.reward]).sort()).toEqual([['t1', 'ok', 1], ['t2', 'ok', 1]]);
      expect(outcome.stdout).toMatch(/^\s*ok\s+2\b/m);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cli-process.js';

// The published declarations (dist/*.d.ts, through the package's `exports`) as a user's
// TypeScript project sees them: compiled with tsc against `import … from 'rollout-queue'`.
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
// Inside the repository, so `rollout-queue` resolves to this package (self-reference).
const DIR = path.join(REPO_ROOT, '.rollout-queue', `types-${process.pid}`);

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

function typecheck(name: string, source: string): { status: number | null; output: string } {
  mkdirSync(DIR, { recursive: true });
  const file = path.join(DIR, `${name}.mts`);
  writeFileSync(file, source);
  const result = spawnSync(process.execPath, [TSC, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', file], { cwd: REPO_ROOT, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('published types', () => {
  it('ref() accepts the exported option types of the built-ins (regression: CodeRunnerOptions was TS2345)', () => {
    const { status, output } = typecheck('ok', [
      "import { ref } from 'rollout-queue';",
      "import type { CodeRunnerOptions } from 'rollout-queue/runners';",
      "import type { CommandRewardOptions, LastNumberOptions, RegexOptions } from 'rollout-queue/rewards';",
      "const run: CodeRunnerOptions = { entrypoint: 'main.py', timeoutMs: 10_000 };",
      "const gold: LastNumberOptions = { goldKey: 'answer' };",
      "const pattern: RegexOptions = { pattern: '^4' } as RegexOptions;",
      "const judge: CommandRewardOptions = { command: ['python3', 'judge.py'], files: { 'judge.py': 'print(1)' }, goldKeys: ['answer'] };",
      "export const refs = [ref('rollout-queue/runners:codeRunner', run), ref('rollout-queue/rewards:lastNumber', gold), ref('rollout-queue/rewards:regex', pattern), ref('rollout-queue/rewards:command', judge)];",
      '',
    ].join('\n'));
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('ref() refuses a config that is no object, and a built-in config with a misspelt key (issue 31)', () => {
    const { status, output } = typecheck('bad', [
      "import { ref } from 'rollout-queue';",
      "export const r = ref('@acme/rollouts/rewards:judge', 42);",
      "export const s = ref('rollout-queue/rewards:lastNumber', 42);",
      "export const t = ref('rollout-queue/runners:codeRunner', { entrypiont: 'main.py' });",
      '',
    ].join('\n'));
    expect(status).not.toBe(0);
    expect(output).toMatch(/bad\.mts\(2,\d+\): error TS2345/);
    expect(output).toMatch(/bad\.mts\(3,\d+\): error TS2559: Type '42' has no properties in common with type 'LastNumberOptions'/);
    expect(output).toMatch(/bad\.mts\(4,\d+\): error TS2561: .*'entrypiont' does not exist in type 'CodeRunnerOptions'/);
  });

  it('docstrings of options and Result fields reach a user\'s editor through dist/*.d.ts', () => {
    mkdirSync(DIR, { recursive: true });
    const file = path.join(DIR, 'docs.mts');
    writeFileSync(file, [
      "import type { Result, WorkerOptions, ProducerOptions } from 'rollout-queue';",
      "import type { CodeRunnerOptions } from 'rollout-queue/runners';",
      'declare const r: Result; declare const w: WorkerOptions; declare const p: ProducerOptions; declare const c: CodeRunnerOptions;',
      'export const used = [r.queuedMs, w.concurrency, p.maxInFlight, c.timeoutMs];',
      '',
    ].join('\n'));
    const program = ts.createProgram([file], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, noEmit: true, skipLibCheck: true, types: ['node'] });
    const checker = program.getTypeChecker();
    const docs: Record<string, string> = {};
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAccessExpression(node)) {
        const symbol = checker.getSymbolAtLocation(node.name);
        docs[node.name.text] = ts.displayPartsToString(symbol?.getDocumentationComment(checker) ?? []);
        const declaration = symbol?.declarations?.[0];
        expect(declaration?.getSourceFile().fileName, node.name.text).toMatch(/\/dist\/.*\.d\.ts$/);
      }
      ts.forEachChild(node, visit);
    };
    visit(program.getSourceFile(file) as ts.SourceFile);
    expect(docs.queuedMs).toMatch(/From enqueue to the start of the last attempt, ms/);
    expect(docs.concurrency).toMatch(/Default 2,\s+bounds 1–1000/);
    expect(docs.maxInFlight).toMatch(/Default 500/);
    expect(docs.timeoutMs).toMatch(/Default 60 000/);
  });
});

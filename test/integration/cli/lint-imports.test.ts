import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cli-process.js';

// The layer rules of .dependency-cruiser.cjs (`npm run lint:imports`) against planted source
// trees (never the real src/), run through the real depcruise binary.
const DEPCRUISE = path.join(REPO_ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const CONFIG = path.join(REPO_ROOT, '.dependency-cruiser.cjs');
let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'rq-layers-'));
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ name: 'rollout-queue', type: 'module', exports: { './rewards': './dist/rewards/index.js' } }));
  await mkdir(path.join(root, 'dist', 'rewards'), { recursive: true });
  await writeFile(path.join(root, 'dist', 'rewards', 'index.js'), 'export const r = 1;\n');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function plant(files: Record<string, string>): Promise<void> {
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, 'src', file)), { recursive: true });
    await writeFile(path.join(root, 'src', file), content);
  }
}

function check(): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'err'], { cwd: root, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const CLEAN = {
  'spec/index.ts': "export const v = 1;\n",
  'lease/keys.ts': "import { v } from '../spec/index.js';\nexport const k = v;\n",
  'producer/queue.ts': "import { k } from '../lease/keys.js';\nexport const q = [k];\n",
  'consumer/worker.ts': "import type { k } from '../lease/keys.js';\nexport const w = 1;\n",
  'sandbox/unit.ts': "import { v } from '../spec/index.js';\nexport const u = v;\n",
  'runners/code.ts': "import { u } from '../sandbox/unit.js';\nexport const c = u;\n",
  'gateway/server.ts': "import { q } from '../producer/queue.js';\nexport const g = q;\n",
  'cli/main.ts': "import { q } from '../producer/queue.js';\nimport { w } from '../consumer/worker.js';\nimport { g } from '../gateway/server.js';\nexport const m = [q, w, g];\n",
  'index.ts': "export * from './producer/queue.js';\n",
};

describe('lint:imports (dependency-cruiser layer rules)', () => {
  it('passes a tree whose imports flow one way', async () => {
    await plant(CLEAN);
    const { status, output } = check();
    expect(status, output).toBe(0);
    expect(output).toContain('no dependency violations found (9 modules');
  });

  it('catches producer importing consumer, naming the rule, file and import', async () => {
    await plant({ ...CLEAN, 'producer/queue.ts': "import { w } from '../consumer/worker.js';\nexport const q = w;\n" });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output).toContain('layer-producer: src/producer/queue.ts → src/consumer/worker.ts');
  });

  it('catches consumer importing producer, even when the import is only a type', async () => {
    await plant({ ...CLEAN, 'consumer/worker.ts': "import type { q } from '../producer/queue.js';\nexport const w = 1;\n" });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output).toContain('layer-consumer: src/consumer/worker.ts → src/producer/queue.ts');
  });

  it('catches upward imports: spec → lease, built-ins → anything but spec (+ sandbox for runners; + sandbox and runners for rewards), also via the package name', async () => {
    await plant({
      ...CLEAN,
      'spec/index.ts': "export type { k } from '../lease/keys.js';\nexport const v = 1;\n",
      'runners/code.ts': "import 'rollout-queue/rewards';\nexport const r = () => import('../platform/log.js');\n",
      'rewards/gold.ts': "import { l } from '../platform/log.js';\nexport const g = l;\n",
      'platform/log.ts': "export const l = 1;\n",
    });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output).toContain('layer-spec: src/spec/index.ts → src/lease/keys.ts');
    expect(output).toContain('layer-runners: src/runners/code.ts → src/platform/log.ts');
    expect(output).toContain('layer-rewards: src/rewards/gold.ts → src/platform/log.ts');
    expect(output).toContain('no-self-import: src/runners/code.ts → dist/rewards/index.js');
  });

  it('the gateway may import the producer, never the consumer; the package entry never the cli', async () => {
    await plant({
      ...CLEAN,
      'gateway/server.ts': "import { w } from '../consumer/worker.js';\nexport const g = w;\n",
      'index.ts': "export * from './cli/main.js';\n",
    });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output).toContain('layer-gateway: src/gateway/server.ts → src/consumer/worker.ts');
    expect(output).toContain('layer-root: src/index.ts → src/cli/main.ts');
  });

  // Issue 29: the harness seam is one folder of three layers, each checked.
  it('the harness layers: worker a built-in, coordinator above the producer (never below it), the HTTP client never reaching Redis', async () => {
    await plant({
      ...CLEAN,
      'harness/worker/runner.ts': "import { q } from '../../producer/queue.js';\nexport const r = q;\n",
      'harness/coordinator/queue-dispatch.ts': "import { q } from '../../producer/queue.js';\nexport const d = q;\n",
      'producer/uses-harness.ts': "import { d } from '../harness/coordinator/queue-dispatch.js';\nexport const u = d;\n",
      'harness/http/http-dispatch.ts': "import { d } from '../coordinator/queue-dispatch.js';\nexport const h = d;\n",
      'harness/stray.ts': "import { v } from '../spec/index.js';\nexport const s = v;\n",
    });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output).toContain('layer-harness/worker: src/harness/worker/runner.ts → src/producer/queue.ts');
    expect(output).toContain('layer-producer: src/producer/uses-harness.ts → src/harness/coordinator/queue-dispatch.ts');
    expect(output).toContain('harness-http-client-light: src/harness/http/http-dispatch.ts → src/harness/coordinator/queue-dispatch.ts');
    expect(output).not.toContain('layer-harness/coordinator');
    expect(output).toContain('no-unknown-layer: src/harness/stray.ts');
  });

  it('catches an import cycle', async () => {
    await plant({
      ...CLEAN,
      'lease/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'lease/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
    });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output.replace(/\s+/g, ' ')).toMatch(/no-circular: src\/lease\/a\.ts → src\/lease\/b\.ts → src\/lease\/a\.ts/);
  });

  it('ignores imports in comments', async () => {
    await plant({
      ...CLEAN,
      'consumer/worker.ts': [
        "/** e.g. import { q } from '../producer/queue.js' */",
        '// import { q } from "../producer/queue.js";',
        'const quote = /["\'`]/;',
        'export const w = [quote];',
      ].join('\n'),
    });
    const { status, output } = check();
    expect(status, output).toBe(0);
  });

  it('flags a folder that is no known layer', async () => {
    await plant({ ...CLEAN, 'misc/x.ts': "import { v } from '../spec/index.js';\nexport const x = v;\n" });
    const { status, output } = check();
    expect(status).not.toBe(0);
    expect(output).toContain('no-unknown-layer: src/misc/x.ts');
  });
});

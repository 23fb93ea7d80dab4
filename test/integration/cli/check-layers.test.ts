import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cli-process.js';

// scripts/check-layers.js against planted source trees (never the real src/).
const SCRIPT = path.join(REPO_ROOT, 'scripts', 'check-layers.js');
let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'rq-layers-'));
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
  const result = spawnSync(process.execPath, [SCRIPT, 'src'], { cwd: root, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const CLEAN = {
  'spec/index.ts': "export const v = 1;\n",
  'lease/keys.ts': "import { v } from '../spec/index.js';\nexport const k = v;\n",
  'producer/queue.ts': "import { k } from '../lease/keys.js';\nimport { Queue } from 'bullmq';\nexport const q = [k, Queue];\n",
  'consumer/worker.ts': "import type { k } from '../lease/keys.js';\nexport const w = 1;\n",
  'cli/main.ts': "import { q } from '../producer/queue.js';\nimport { w } from '../consumer/worker.js';\nexport const m = [q, w];\n",
  'index.ts': "export * from './producer/queue.js';\n",
};

describe('check-layers', () => {
  it('passes a tree whose imports flow one way', async () => {
    await plant(CLEAN);
    const { status, output } = check();
    expect(status, output).toBe(0);
    expect(output).toContain('6 files');
  });

  it('catches producer importing consumer, naming file, import and layers', async () => {
    await plant({ ...CLEAN, 'producer/queue.ts': "import { w } from '../consumer/worker.js';\nexport const q = w;\n" });
    const { status, output } = check();
    expect(status).toBe(1);
    expect(output).toContain(`${path.join('src', 'producer', 'queue.ts')}: imports ../consumer/worker.js (layer producer may not import consumer)`);
  });

  it('catches upward imports: spec → lease, built-ins → anything but spec (also via the package name)', async () => {
    await plant({
      ...CLEAN,
      'spec/index.ts': "export type { k } from '../lease/keys.js';\nexport const v = 1;\n",
      'runners/code.ts': "import 'rollout-queue/rewards';\nexport const r = () => import('../platform/log.js');\n",
      'platform/log.ts': "export const l = 1;\n",
    });
    const { status, output } = check();
    expect(status).toBe(1);
    expect(output).toContain('(layer spec may not import lease)');
    expect(output).toContain('imports rollout-queue/rewards (layer runners may not import rewards)');
    expect(output).toContain('imports ../platform/log.js (layer runners may not import platform)');
  });

  it('ignores imports in comments, and is not fooled by quotes in a regex', async () => {
    await plant({
      ...CLEAN,
      'consumer/worker.ts': [
        "/** e.g. import { q } from '../producer/queue.js' */",
        '// import { q } from "../producer/queue.js";',
        'const quote = /["\'`]/;',
        "import { q } from '../producer/queue.js';",
        'export const w = [quote, q];',
      ].join('\n'),
    });
    const { status, output } = check();
    expect(status).toBe(1);
    expect(output.match(/may not import/g)).toHaveLength(1);
    expect(output).toContain('(layer consumer may not import producer) at line 4');
  });

  it('keeps the gateway off the consumer and the dispatch built-in on spec only (also via rollout-queue/dispatch)', async () => {
    await plant({
      ...CLEAN,
      'dispatch/runner.ts': "import { v } from '../spec/index.js';\nimport { k } from '../lease/keys.js';\nexport const d = [v, k];\n",
      'gateway/server.ts': "import { q } from '../producer/queue.js';\nimport { w } from '../consumer/worker.js';\nimport 'rollout-queue/dispatch';\nexport const g = [q, w];\n",
    });
    const { status, output } = check();
    expect(status).toBe(1);
    expect(output).toContain('(layer dispatch may not import lease)');
    expect(output).toContain('imports ../consumer/worker.js (layer gateway may not import consumer)');
    expect(output.match(/may not import/g)).toHaveLength(2);
  });

  it('flags a folder that is no known layer', async () => {
    await plant({ ...CLEAN, 'misc/x.ts': 'export const x = 1;\n' });
    const { status, output } = check();
    expect(status).toBe(1);
    expect(output).toContain('no known layer');
  });
});

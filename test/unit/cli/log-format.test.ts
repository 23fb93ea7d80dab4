import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliLogDestination, logFormatOf } from '../../../src/cli/log-lines.js';
import { createLogger } from '../../../src/platform/logger.js';

// Issue 31: logs were raw pino JSON on a terminal. Here fds are files (no terminal): the choice
// by LOG_FORMAT and by role; the terminal path itself runs in test/integration/cli/log-format.
let dir: string;
let fd: number;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rq-logfmt-'));
  file = path.join(dir, 'log');
  fd = openSync(file, 'w');
});

afterEach(() => {
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

describe('CLI log format', () => {
  it('off a terminal: JSON for a service, text lines for a command; LOG_FORMAT chooses', () => {
    expect(logFormatOf('service', {}, fd)).toBe('json');
    expect(logFormatOf('command', {}, fd)).toBe('text');
    expect(logFormatOf('service', { LOG_FORMAT: 'pretty' }, fd)).toBe('pretty');
    expect(logFormatOf('command', { LOG_FORMAT: 'json' }, fd)).toBe('json');
  });

  it('refuses an unknown LOG_FORMAT naming the variable and its values', () => {
    expect(() => logFormatOf('service', { LOG_FORMAT: 'yaml' }, fd)).toThrow(/^LOG_FORMAT must be one of pretty, json, text, got "yaml"/);
  });

  it('pretty is pino-pretty: a level word and the message, fields below, secrets still redacted, no JSON', () => {
    const logger = createLogger({ component: 'worker' }, cliLogDestination('service', { LOG_FORMAT: 'pretty' }, fd));
    logger.warn({ queue: 'q1', token: 'hunter2-secret' }, 'waiting for Redis');
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: waiting for Redis\n/);
    expect(text).toContain('queue: "q1"');
    expect(text).toContain('token: "[redacted]"');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('{"level"');
  });

  it('json is one pino JSON object a line', () => {
    const logger = createLogger({ component: 'worker' }, cliLogDestination('service', {}, fd));
    logger.warn({ queue: 'q1' }, 'waiting for Redis');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ level: 40, component: 'worker', queue: 'q1', msg: 'waiting for Redis' });
  });
});

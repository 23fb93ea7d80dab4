import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTasksFile } from '../../../src/cli/tasks-file.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-tasks-file-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function tasksOf(content: Buffer): Promise<Awaited<ReturnType<typeof readTasksFile>>> {
  const file = path.join(dir, 'tasks.jsonl');
  await writeFile(file, content);
  return readTasksFile(file, { label: 'tasks.jsonl' });
}

// Fresh-user report: invalid UTF-8 bytes (a Latin-1 file) were read as U+FFFD and the tasks ran
// with text the file never held.
describe('a tasks file that is not UTF-8', () => {
  const cases: Array<[string, Buffer, RegExp]> = [
    ['a Latin-1 é before ASCII on line 2', Buffer.from('{"id":"a"}\n{"id":"caf\xe9"}\n', 'latin1'), /^tasks\.jsonl:2: not UTF-8 text \(byte 11 of the line, 0xe9, begins no valid UTF-8 sequence\); save the file as UTF-8\. Nothing was enqueued\.$/],
    ['a lone 0xff on line 1', Buffer.from([0x7b, 0xff, 0x7d, 0x0a]), /^tasks\.jsonl:1: not UTF-8 text \(byte 2 of the line, 0xff,/],
    ['a sequence cut short by the end of the file', Buffer.concat([Buffer.from('{"id":"a"}\n{"id":"'), Buffer.from([0xe2, 0x82])]), /^tasks\.jsonl:2: not UTF-8 text \(byte 8 of the line, 0xe2,/],
    ['after a byte order mark', Buffer.from([0xef, 0xbb, 0xbf, 0xc3, 0x28, 0x0a]), /^tasks\.jsonl:1: not UTF-8 text \(byte 4 of the line, 0xc3,/],
  ];
  it.each(cases)('%s is refused naming the line and the byte', async (_label, content, message) => {
    await expect(tasksOf(content)).rejects.toThrow(message);
  });
});

it('a leading byte order mark is dropped and CRLF line ends are read as line ends', async () => {
  const tasks = await tasksOf(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"id":"a","q":"é"}\r\n\r\n{"id":"b"}\r\n')]));
  expect(tasks.map((task) => [task.taskKey, task.line, task.task])).toEqual([['a', 1, { id: 'a', q: 'é' }], ['b', 3, { id: 'b' }]]);
});

// Issue 30: a line's own tag, returned on its Result as meta.
describe('a tasks file line with "$meta"', () => {
  it('gives the line its meta and takes it out of the task (the worker never sees it; the line is still keyed by its id)', async () => {
    const tasks = await tasksOf(Buffer.from('{"id":"a","q":1,"$meta":{"candidate":7,"tags":["x"]}}\n{"q":2}\n'));
    expect(tasks.map(({ taskKey, task, meta }) => ({ taskKey, task, meta }))).toEqual([
      { taskKey: 'a', task: { id: 'a', q: 1 }, meta: { candidate: 7, tags: ['x'] } },
      { taskKey: 2, task: { q: 2 }, meta: undefined },
    ]);
    expect('meta' in (tasks[1] as object)).toBe(false);
  });

  it('refuses a meta over the limit naming the line, the key and the fix; nothing is enqueued', async () => {
    await expect(tasksOf(Buffer.from(`{"id":"a"}\n{"id":"b","$meta":{"blob":"${'x'.repeat(5000)}"}}\n`))).rejects.toThrow(
      /^tasks\.jsonl:2: "\$meta" \(the line's own tag, returned on its Result as meta, never part of the task\): meta: meta is 5011 bytes as JSON, over the 4096-byte limit; keep meta a small tag .* Nothing was enqueued\.$/,
    );
  });
});

// Issue 31: a tasks file with three bad lines needed three runs to find them.
describe('every bad line at once', () => {
  it('reports the three bad lines of one file in one error, in file order, and nothing else', async () => {
    const content = ['{"id":"a","answer":1}', '{"id":"b",answer:2}', '[1,2]', '{"id":"a","answer":3}', '{"id":"d","answer":4}'].join('\n');
    const error = await tasksOf(Buffer.from(content)).catch((err: Error) => err);
    expect((error as Error).message).toBe(
      [
        '--tasks tasks.jsonl has 3 bad lines; nothing was enqueued. Fix them all, then run again:',
        `  tasks.jsonl:2: not valid JSON (${jsonError('{"id":"b",answer:2}')}); each line must be one JSON object.`,
        '  tasks.jsonl:3: expected a JSON object, got array.',
        '  tasks.jsonl:4: task id "a" repeats line 1; task ids name leases and must be unique within a run: give one of them another id.',
      ].join('\n'),
    );
  });

  it('one bad line keeps its own message', async () => {
    await expect(tasksOf(Buffer.from('{"id":"a"}\n[]\n'))).rejects.toThrow(/^tasks\.jsonl:2: expected a JSON object, got array\. Nothing was enqueued\.$/);
  });

  it('shows the first 20 bad lines and counts the rest', async () => {
    const content = Array.from({ length: 25 }, (_, i) => (i % 2 === 0 ? 'nope' : `{"id":"t${i}"}`)).join('\n');
    const message = ((await tasksOf(Buffer.from(content)).catch((err: Error) => err)) as Error).message;
    expect(message.split('\n')[0]).toBe('--tasks tasks.jsonl has 13 bad lines; nothing was enqueued. Fix them all, then run again:');
    expect(message.split('\n').filter((line) => /^ {2}tasks\.jsonl:\d+: not valid JSON/.test(line))).toHaveLength(13);
    const many = Array.from({ length: 30 }, () => 'nope').join('\n');
    const capped = ((await tasksOf(Buffer.from(many)).catch((err: Error) => err)) as Error).message.split('\n');
    expect(capped.filter((line) => line.includes('not valid JSON'))).toHaveLength(20);
    expect(capped.at(-1)).toBe('  … and 10 more bad line(s) (the first 20 are shown)');
  });
});

function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  return '';
}

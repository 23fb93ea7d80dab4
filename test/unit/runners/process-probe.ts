import { readFileSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * State of a pid: "gone" when `process.kill(pid, 0)` throws ESRCH; "zombie" when it has
 * exited but its parent has not reaped it yet (an orphan waits for PID 1 to reap it, and
 * some container inits never do); "alive" otherwise.
 */
export function processState(pid: number): 'gone' | 'zombie' | 'alive' {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    throw err;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z') ? 'zombie' : 'alive';
  } catch {
    return 'gone'; // reaped between the two checks
  }
}

/**
 * Waits until `pid` is no longer running ("gone" or "zombie") or `withinMs` passed, and
 * returns its state then. A killed process that is not our child gives no event to await
 * (no pidfd in node), so this polls every 5 ms; it returns at once when the process is dead.
 */
export async function stateAfterDeath(pid: number, withinMs: number): Promise<'gone' | 'zombie' | 'alive'> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const state = processState(pid);
    if (state !== 'alive' || performance.now() >= deadline) return state;
    await delay(5);
  }
}

/** A loopback server an artifact connects to, so a test can await "the artifact is running". */
export interface ArtifactBeacon {
  readonly port: number;
  /** Resolves with the first line the artifact sends (e.g. its pid) once it has connected. */
  readonly firstLine: Promise<string>;
  close(): Promise<void>;
}

/** Opens an {@link ArtifactBeacon} on 127.0.0.1 and a free port. */
export async function openBeacon(): Promise<ArtifactBeacon> {
  let deliver: (line: string) => void = () => {};
  const firstLine = new Promise<string>((resolve) => {
    deliver = resolve;
  });
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      const end = buffered.indexOf('\n');
      if (end >= 0) deliver(buffered.slice(0, end));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    firstLine,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Artifact code (CommonJS) that connects to a beacon whose port is in env BEACON_PORT and sends
 * its pid as the host sees it (`/proc/self`: in the attempt's PID namespace `process.pid` is the
 * namespace's own number).
 */
export const BEACON_CLIENT_CJS = `
const net = require('node:net');
const beacon = net.connect(Number(process.env.BEACON_PORT), '127.0.0.1', () => beacon.write(require('node:fs').readlinkSync('/proc/self') + '\\n'));
beacon.on('error', () => {});
`;

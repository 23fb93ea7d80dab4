import type { ChildProcess } from 'node:child_process';
import type { Batch, ParentMessage } from './child-protocol.js';

/**
 * Messages to a rollout child posted in one turn of the event loop, sent together at its end
 * as one IPC message ({@link Batch}): a burst of defines, runs and cancels costs one
 * serialization and one wake-up of the child instead of one each. A child no longer connected
 * gets nothing (its exit is judged elsewhere).
 */
export class ChildOutbox {
  private messages: ParentMessage[] = [];

  constructor(private readonly proc: ChildProcess) {}

  post(message: ParentMessage): void {
    if (!this.proc.connected) return;
    this.messages.push(message);
    if (this.messages.length === 1) setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    const messages = this.messages;
    this.messages = [];
    if (messages.length === 0 || !this.proc.connected) return;
    const message: ParentMessage | Batch<ParentMessage> = messages.length === 1 ? (messages[0] as ParentMessage) : { type: 'batch', messages };
    this.proc.send(message, (err) => void err);
  };
}

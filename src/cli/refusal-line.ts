import { writeRefusalCode } from '../platform/write-refusal-code.js';
import { cliEnvironment } from './environment.js';
import { MSG } from './messages.js';

/**
 * One line for Redis refusing writes (OOM at maxmemory, EXECABORT, READONLY…), whichever
 * command met it, instead of a raw ioredis stack. EXECABORT names the refusal behind it
 * (ioredis' `previousErrors`). Undefined for any other error.
 */
export function refusalLine(err: unknown): string | undefined {
  const code = writeRefusalCode(err);
  if (!code) return undefined;
  const previous = (err as { previousErrors?: unknown }).previousErrors;
  const cause = Array.isArray(previous) ? previous.find((inner: unknown) => writeRefusalCode(inner) && writeRefusalCode(inner) !== 'EXECABORT') : undefined;
  const why = ((cause ?? err) as Error).message.split('\n')[0]?.replace(/\s*script: [0-9a-f]{40}, on @user_script:\d+\.?/, '').trim().replace(/\.+$/, '') ?? code;
  let address = '(REDIS_URL)';
  try {
    address = cliEnvironment().address;
  } catch {
    // an unparsable REDIS_URL has its own message elsewhere
  }
  return MSG.redisRefusesWrites(address, writeRefusalCode(cause) ?? code, why);
}

import { z } from 'zod';
import type { Logger } from '../platform/logger.js';
import { EnvNameSchema, RefSchema, type Ref } from '../spec/index.js';

/** Default of {@link GatewayOptions.maxBodyBytes}: 10 MiB, the harness server's own `maxBodyBytes`. */
export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;
/** Default of {@link GatewayOptions.graceMs}: 30 s. */
export const DEFAULT_GRACE_MS = 30_000;


/** Addresses that only this machine can reach: the only ones a gateway without auth may listen on. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Options of `startGateway`, one zod schema, compiled once by {@link compileGatewayOptions}. */
export const GatewayOptionsSchema = z
  .object({
    /** Redis URL (credentials never shown). */
    redisUrl: z.string().min(1),
    /** Key prefix of the queues. Default `rq`. */
    prefix: z.string().min(1).optional(),
    /** Queue the leases go to (a request's `placement` may pick another). Default `rollouts`. */
    queue: z.string().min(1).default('rollouts'),
    /** Port; 0 picks a free one (see `Gateway.url`). */
    port: z.number().int().min(0).max(65_535),
    /** Listen address. Default `127.0.0.1`. */
    host: z.string().min(1).default('127.0.0.1'),
    /**
     * The Dispatch the workers run for `POST /dispatch`: a Ref to a factory installed on the
     * workers (their allowlist must admit it). Unset: the gateway serves the runs API only and
     * answers `POST /dispatch` 404 `NoDispatch`.
     */
    dispatch: RefSchema.optional(),
    /** The bearer token every request must carry (`Authorization: Bearer <token>`). Required unless `noAuth`. */
    authToken: z.string().min(16, 'authToken must be at least 16 characters').optional(),
    /** Serve without auth: only allowed on a loopback `host`. */
    noAuth: z.boolean().default(false),
    /** Largest request body, bytes; a larger one is answered 413. Default 10 MiB, bounds 1 KiB–512 MiB. */
    maxBodyBytes: z.number().int().min(1024).max(512 * 1024 * 1024).default(DEFAULT_MAX_BODY_BYTES),
    /** Keys of each scenario the Dispatch must not see (its gold): queueDispatch's `goldKeys`. Default none. */
    goldKeys: z.array(z.string().min(1).max(256)).max(64).optional(),
    /**
     * How long a delivered dispatch's answer (and a kept final failure) is kept for a client's late
     * retry, ms (queueDispatch's `keepAnswerMs`, default 600 000); also how long a dispatch run
     * goes without a client before the gateway finishes it (at least 5 s).
     */
    keepAnswerMs: z.number().int().min(0).max(86_400_000).optional(),
    /**
     * Names of secrets each dispatch gets (`sandbox.env` of its lease): the workers read their
     * values from their own environment and hand them to the Dispatch as `ctx.secrets` and in its
     * `process.env`; values never pass through the gateway, and are redacted from every answer.
     */
    env: z.array(EnvNameSchema).max(64).default([]),
    /**
     * Time limit of each dispatch, ms (the lease's `timeouts.runMs`, enforced on the worker: past it
     * the Dispatch's signal aborts and the answer is 500 `RunTimeout`). Default: the spec's 600 000.
     */
    runMs: z.number().int().min(1).max(86_400_000).optional(),
    /**
     * On `close()` (SIGTERM), how long requests in flight get to be answered before the gateway
     * answers what is left 503 `GatewayClosing` and exits, ms. Default 30 000, bounds 0–3 600 000.
     */
    graceMs: z.number().int().min(0).max(3_600_000).default(DEFAULT_GRACE_MS),
    /** pino logger. */
    logger: z.custom<Logger>((value) => typeof value === 'object' && value !== null && typeof (value as Logger).child === 'function', 'logger must be a pino logger').optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.noAuth && value.authToken !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['noAuth'], message: 'give either an auth token or noAuth, not both' });
    } else if (!value.noAuth && value.authToken === undefined) {
      ctx.addIssue({ code: 'custom', path: ['authToken'], message: 'a bearer token is required (or noAuth on a loopback host)' });
    } else if (value.noAuth && !isLoopbackHost(value.host)) {
      ctx.addIssue({ code: 'custom', path: ['noAuth'], message: `refused on host "${value.host}": without auth the gateway only listens on loopback (127.0.0.1, ::1); give a bearer token to listen elsewhere` });
    }
  });

/** What a caller passes to `startGateway`. */
export type GatewayOptions = Omit<z.input<typeof GatewayOptionsSchema>, 'dispatch'> & { readonly dispatch?: Ref | { readonly $ref: string; readonly config?: Record<string, unknown> } };

/** Checked, defaulted gateway options. */
export type CompiledGatewayOptions = Readonly<z.output<typeof GatewayOptionsSchema>>;

/**
 * Checks gateway options.
 * @throws Error naming the option, what is wrong and the fix.
 */
export function compileGatewayOptions(input: GatewayOptions): CompiledGatewayOptions {
  const parsed = GatewayOptionsSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`gateway option ${issue?.path.map(String).join('.') || '(options)'}: ${issue?.message ?? 'invalid'}`);
  }
  return Object.freeze(parsed.data);
}

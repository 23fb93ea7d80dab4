/**
 * Defaults of the spec's `sandbox` limits on the programs the plane spawns (see
 * `SandboxSpecSchema`). Their own module, free of zod: the sandbox and the runners use them in
 * every rollout child.
 */

/** Default `sandbox.cpus`: one CPU's worth of time per attempt of a program the plane spawns. */
export const DEFAULT_CPUS = 1;
/** Default `sandbox.diskMb`, MiB: what such a program may write to its work dir, /tmp and /dev/shm together. */
export const DEFAULT_DISK_MB = 512;
/** What `sandbox.network` may ask for: `none` (only its own loopback, the default) or `host` (the worker's network). */
export const SANDBOX_NETWORKS = ['none', 'host'] as const;

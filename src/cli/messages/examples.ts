import { CLI_NAME } from '../cli-command.js';

/** The `Examples:` section of each command's `--help` (option-help.ts adds it), as a user would type them. */
export const EXAMPLES = {
  worker: [
    `${CLI_NAME} worker`,
    `${CLI_NAME} worker --queue evals --concurrency 8 --allow '@acme/rollouts/*'`,
    `${CLI_NAME} worker --redis-url redis://redis.internal:6379 --placement gpu=h100 --metrics-port 9464`,
  ],
  run: [
    `${CLI_NAME} run --tasks tasks.jsonl --artifact solve.py --run rollout-queue/runners:codeRunner --reward rollout-queue/rewards:lastNumber`,
    `${CLI_NAME} run --tasks tasks.jsonl --artifact app/ --run rollout-queue/runners:codeRunner --run-config '{"entrypoint": "main.py"}' \\`,
    `    --reward rollout-queue/rewards:exactMatch --reward-config '{"goldKey": "expected"}' --run-id eval-1 --out eval-1.jsonl`,
    `${CLI_NAME} run … --run-id eval-1     (the same command again re-attaches to run eval-1)`,
  ],
  resume: [`${CLI_NAME} resume eval-1`, `${CLI_NAME} resume eval-1 --queue evals --out eval-1.jsonl`],
  status: [`${CLI_NAME} status`, `${CLI_NAME} status eval-1`, `${CLI_NAME} status eval-1 --queue evals --json`],
  cancel: [`${CLI_NAME} cancel eval-1`, `${CLI_NAME} cancel eval-1 --queue evals`],
  purge: [`${CLI_NAME} purge eval-1`, `${CLI_NAME} purge --older-than 7d`, `${CLI_NAME} purge eval-1 --discard-undelivered`],
  dashboard: [`${CLI_NAME} dashboard`, `${CLI_NAME} dashboard --port 8080 --queue rollouts --queue evals`, `ROLLOUT_QUEUE_DASHBOARD_TOKEN=… ${CLI_NAME} dashboard --host 0.0.0.0`],
  gateway: [
    `${CLI_NAME} gateway --port 8080 --no-auth`,
    `GATEWAY_TOKEN=$(openssl rand -hex 32) ${CLI_NAME} gateway --port 8080 --host 0.0.0.0 --auth-token-env GATEWAY_TOKEN --dispatch @acme/evals:solve`,
  ],
  demo: [`${CLI_NAME} demo`, `${CLI_NAME} demo --workers 4 --tasks 40 --keep`],
} as const;

import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { missingToolMessage } from './system-tool.js';

/** Debian's Chromium (package `chromium`, installed by scripts/install-system-deps.sh). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Debian Chromium driven by playwright-core (which downloads no browser of its own).
 * @throws Error naming scripts/install-system-deps.sh when Chromium is not installed (the test
 *   fails, never skips).
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(missingToolMessage(CHROMIUM, 'chromium'));
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

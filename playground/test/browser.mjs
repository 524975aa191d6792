// Headless Chromium for the end-to-end tests: Debian's /usr/bin/chromium through playwright-core
// (no browser download), with the flags a closed network needs, and a fresh profile per run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Launches Chromium; resolves to `{context, close()}`. `timezoneId` sets the browser's local time
 * zone (the tests pick one far from UTC, so a time shown in local time would be seen).
 */
export async function launch({ timezoneId } = {}) {
  const profile = await mkdtemp(join(tmpdir(), 'playground-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 1000 },
    timezoneId,
    acceptDownloads: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

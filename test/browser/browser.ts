// Headless Chromium from Debian's packages, driven by playwright-core (whose own browser builds
// cannot be downloaded here). Every launch gets a fresh profile.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Without these, a headless Chromium keeps calling Google's services, and every refusal is logged.
const flags = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(chromiumPath)) {
    throw new Error(`no Chromium at ${chromiumPath}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'albumflow-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: flags,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Where the browser tests leave screenshots (BROWSER_ARTIFACTS_DIR, else test/browser/artifacts). */
export const artifactsDir = path.resolve(process.env.BROWSER_ARTIFACTS_DIR ?? path.join(import.meta.dirname, 'artifacts'));

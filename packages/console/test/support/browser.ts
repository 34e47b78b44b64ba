/**
 * Debian's Chromium driven by playwright-core, as in the client's browser
 * tests. When no browser can be started, `launchBrowser` throws with the
 * reason and the fix: the tests fail, they are never skipped.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Where Chromium is: `$CHROMIUM_PATH`, else Debian's `chromium` package. */
export const CHROMIUM_PATH = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/** Headless in a CI container (root, no GPU), on a closed network (no background calls to Google). */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

export async function launchBrowser(): Promise<Browser> {
  const fix = "install Debian's chromium (apt-get install -y chromium; .ci/run does) or set CHROMIUM_PATH";
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no browser can be started: ${CHROMIUM_PATH} does not exist; ${fix}`);
  try {
    return await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 });
  } catch (error) {
    throw new Error(`no browser can be started from ${CHROMIUM_PATH}: ${error instanceof Error ? error.message : String(error)}; ${fix}`);
  }
}

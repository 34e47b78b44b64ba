/**
 * A headless Chromium for the browser tests of every package: Debian's
 * `chromium` driven by playwright-core. When none can be started,
 * `launchChromium` throws with the reason and the fix: those tests fail,
 * they are never skipped.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Where Chromium is: `$CHROMIUM_PATH`, else Debian's `chromium` package. */
export const CHROMIUM_PATH = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/**
 * Flags for a headless Chromium in a sandboxed CI container (running as
 * root, no GPU) on a closed network: without the background-networking
 * flags it keeps trying to reach Google's hosts.
 */
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

export async function launchChromium(): Promise<Browser> {
  const fix =
    "install Debian's chromium (apt-get install -y chromium; `pnpm test` does, through scripts/ensure-test-packages.sh) or set CHROMIUM_PATH";
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no browser can be started: ${CHROMIUM_PATH} does not exist; ${fix}`);
  try {
    return await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 });
  } catch (error) {
    throw new Error(`no browser can be started from ${CHROMIUM_PATH}: ${error instanceof Error ? error.message : String(error)}; ${fix}`);
  }
}

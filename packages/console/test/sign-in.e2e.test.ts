/**
 * Signing in to the console in a real browser (Debian's Chromium, playwright-core) against a real
 * server whose address throttle is small (two failed authentications): the tab keeps a token and
 * shows the workspace only once the server's answer shows it accepted the token. A not-found
 * catalogue does (the server answers it only after authenticating); `overloaded` from a throttled
 * address does not, so a wrong token is never taken for a working one there.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedServer, type EmbeddedServer } from "@golem-stream/server";
// The built package, as the CLI uses it: its handler serves dist/www.
import { consoleHandler } from "../dist/node/index.js";
import { launchBrowser } from "./support/browser.js";

const TOKEN = "console-sign-in-token";
const OVERLOADED = "The server is busy, or refuses this address for a while after failed sign-ins (HTTP 503, overloaded). Try again later.";
const REFUSED = "The server refused this token (unauthenticated). Check it and sign in again.";

let dataDir: string;
let server: EmbeddedServer;
let browser: Browser;
/** Why the browser could not be started: every test fails with it (a failed beforeAll would only skip them). */
let startFailure: Error | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "golem-stream-console-sign-in-"));
  server = await startEmbeddedServer({
    dataDir,
    tokens: [TOKEN],
    synchronous: "normal",
    pages: consoleHandler(),
    browsers: { allowedOrigins: [], allowListeningOrigins: true },
    limits: { authFailuresPerAddress: 2 },
  });
  try {
    browser = await launchBrowser();
  } catch (error) {
    startFailure = error instanceof Error ? error : new Error(String(error));
    console.error(startFailure.message);
  }
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

/** A fresh tab (its own sessionStorage) on the console at `path`. */
async function openConsole(path = "/"): Promise<{ page: Page; context: BrowserContext }> {
  if (startFailure !== undefined) throw startFailure;
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.httpUrl}${path}`);
  await page.waitForSelector("body[data-ready=true]");
  return { page, context };
}

/** Signs in through the form and waits until the sign-in error says `shown` (the last one's text cleared first). */
async function refusedWith(page: Page, token: string, shown: string): Promise<void> {
  await page.evaluate(() => (document.getElementById("sign-in-error")!.textContent = ""));
  await page.getByLabel("Bearer token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#sign-in-error", { hasText: shown }).waitFor({ state: "visible" });
}

// In this order: the second test uses up the address's allowance of failures.
describe("console sign-in against a server that throttles failed authentications", () => {
  it("a token the server accepts signs in to an application it does not have: not-found comes after authentication", async () => {
    const { page, context } = await openConsole("/?application=nowhere");
    try {
      await page.getByLabel("Bearer token").fill(TOKEN);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator("#workspace").waitFor({ state: "visible" });
      expect(await page.locator("#catalogue-error").textContent()).toBe(
        'There is no application "nowhere" with environment "default" on this server.',
      );
      expect(await page.evaluate(() => sessionStorage.getItem("golem-stream-console:token"))).toBe(TOKEN);
    } finally {
      await context.close();
    }
  });

  it("once the address is throttled (503 overloaded), a wrong token is not signed in, and nothing is kept", async () => {
    const { page, context } = await openConsole();
    try {
      await refusedWith(page, "wrong-1", REFUSED);
      await refusedWith(page, "wrong-2", REFUSED);
      await refusedWith(page, "wrong-3", OVERLOADED);
      expect(await page.locator("#workspace").isHidden()).toBe(true);
      expect(await page.locator("#sign-in").isVisible()).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      // The right token is not checked either while the address is throttled: still signed out, and told why.
      await refusedWith(page, TOKEN, OVERLOADED);
      expect(await page.locator("#workspace").isHidden()).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    } finally {
      await context.close();
    }
  });
});

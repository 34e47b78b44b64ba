/**
 * The web console in a real browser (Debian's Chromium, playwright-core),
 * served by the real server (`startEmbeddedServer` with the console's
 * handler as `pages` and its listening origins allowed, as
 * `golem-stream serve` does). Fails with the reason, never skips, when no
 * browser can be started.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedServer, type EmbeddedServer } from "@golem-stream/server";
// The built package, as the CLI uses it: its handler serves dist/www.
import { consoleHandler } from "../dist/node/index.js";
import { launchBrowser } from "./support/browser.js";

const TOKEN = "console-test-token";
const SCREENSHOT = fileURLToPath(new URL("../../../docs/console.png", import.meta.url));

let dataDir: string;
let server: EmbeddedServer;
let browser: Browser;
/** Why the browser could not be started: every test fails with it (a failed beforeAll would only skip them). */
let startFailure: Error | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "golem-stream-console-"));
  server = await startEmbeddedServer({
    dataDir,
    tokens: [TOKEN],
    synchronous: "normal",
    pages: consoleHandler(),
    browsers: { allowedOrigins: [], allowListeningOrigins: true },
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

/** A fresh tab (its own sessionStorage and IndexedDB) on the console. */
async function openConsole(): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
  if (startFailure !== undefined) throw startFailure;
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  await page.goto(`${server.httpUrl}/`);
  await page.waitForSelector("body[data-ready=true]");
  return { page, context, errors };
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel("Bearer token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function chooseMethod(page: Page, method: string): Promise<void> {
  await page.locator("#agent-type").selectOption("echo");
  await page.locator("#method").selectOption(method);
  await page.getByLabel("name", { exact: true }).fill("console");
}

/** The text items of the first stream panel. */
function items(page: Page): Promise<string[]> {
  return page.locator("#streams .stream").first().locator("ol.items li").allTextContents();
}

describe("the web console in Chromium", () => {
  it("a wrong token is refused with a clear error, and nothing is kept", async () => {
    const { page, context } = await openConsole();
    try {
      await signIn(page, "not-the-token");
      const error = page.locator("#sign-in-error");
      await error.waitFor({ state: "visible" });
      expect(await error.textContent()).toBe("The server refused this token (unauthenticated). Check it and sign in again.");
      expect(await page.locator("#workspace").isHidden()).toBe(true);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    } finally {
      await context.close();
    }
  });

  it("count through the form, the page reloaded mid-stream: every item exactly once after the resume", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "count");
      const to = 150;
      await page.getByLabel("to", { exact: true }).fill(String(to));
      await page.getByLabel("delayMs", { exact: true }).fill("25");
      await page.getByRole("button", { name: "Start" }).click();
      await page.waitForFunction(() => document.querySelectorAll("#streams ol.items li").length >= 40);
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      const before = await items(page);
      expect(before.length).toBeLessThan(to); // the reload really comes mid-stream
      await page.reload();
      await page.waitForSelector("body[data-ready=true]");
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 60_000 });
      const after = await items(page);
      expect(after).toEqual(Array.from({ length: to }, (_, i) => String(i)));
      expect(await page.locator("#status").textContent()).toBe("finished");
      expect(await page.locator(".stream-name").first().textContent()).toBe("result");
      expect(errors).toEqual([]);
      // The token never reaches a URL or the page's storage beyond this tab's sessionStorage.
      expect(page.url()).toBe(`${server.httpUrl}/`);
      expect(await page.evaluate(() => localStorage.length)).toBe(0);
    } finally {
      await context.close();
    }
  });

  it("digest of a file chosen in the file picker: the SHA-256 the console shows is the file's", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "digest");
      const bytes = randomBytes(3 * 1024 * 1024 + 17);
      await page.getByLabel("data", { exact: true }).setInputFiles({ name: "sample.bin", mimeType: "application/octet-stream", buffer: bytes });
      await page.getByRole("button", { name: "Start" }).click();
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 60_000 });
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      expect(JSON.parse((await page.locator("#result").textContent()) ?? "")).toEqual({ bytes: String(bytes.length), sha256 });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

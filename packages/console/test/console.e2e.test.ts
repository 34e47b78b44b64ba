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
import { startTcpProxy, type TcpProxy } from "@golem-stream/test-support";

const TOKEN = "console-test-token";
// Every run saves the screenshot as an artifact; UPDATE_SCREENSHOT=1 also refreshes the README's copy.
const SCREENSHOT = fileURLToPath(
  new URL(process.env.UPDATE_SCREENSHOT === "1" ? "../../../docs/console.png" : "../test-artifacts/console.png", import.meta.url),
);

let dataDir: string;
let server: EmbeddedServer;
/** A second way to the same server, through a network that fails on purpose: its origin is allowed too. */
let network: TcpProxy;
/** A third way, whose origin the server does not allow (as a DNS name it was not told about). */
let foreign: TcpProxy;
let browser: Browser;
/** Why the browser could not be started: every test fails with it (a failed beforeAll would only skip them). */
let startFailure: Error | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "golem-stream-console-"));
  network = await startTcpProxy();
  foreign = await startTcpProxy();
  server = await startEmbeddedServer({
    dataDir,
    tokens: [TOKEN],
    synchronous: "normal",
    pages: consoleHandler(),
    browsers: { allowedOrigins: [network.origin], allowListeningOrigins: true },
  });
  network.setUpstreams([{ port: Number(new URL(server.httpUrl).port) }]);
  foreign.setUpstreams([{ port: Number(new URL(server.httpUrl).port) }]);
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
  await network?.close();
  await foreign?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

/** A fresh tab (its own sessionStorage and IndexedDB) on the console. */
async function openConsole(origin = server.httpUrl): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
  if (startFailure !== undefined) throw startFailure;
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  await page.goto(`${origin}/`);
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

/** Fills `count`'s parameters and starts it. */
async function startCount(page: Page, to: number, delayMs: number): Promise<void> {
  await page.getByLabel("to", { exact: true }).fill(String(to));
  await page.getByLabel("delayMs", { exact: true }).fill(String(delayMs));
  await page.getByRole("button", { name: "Start" }).click();
}

/** The text items of the first stream panel. */
function items(page: Page): Promise<string[]> {
  return page.locator("#streams .stream").first().locator("ol.items li").allTextContents();
}

/** Every stream panel: its name, and its text items. */
function panels(page: Page): Promise<{ name: string; items: string[] }[]> {
  return page.locator("#streams .stream").evaluateAll((nodes) =>
    nodes.map((node) => ({
      name: node.querySelector(".stream-name")?.textContent ?? "",
      items: Array.from(node.querySelectorAll("ol.items li"), (item) => item.textContent ?? ""),
    })),
  );
}

/** The console's IndexedDB as the page sees it: the stored run ids and how many items they hold. */
function stored(page: Page): Promise<{ runs: string[]; items: number }> {
  return page.evaluate(
    () =>
      new Promise<{ runs: string[]; items: number }>((resolve, reject) => {
        const open = indexedDB.open("golem-stream-console", 1);
        open.onupgradeneeded = () => {
          open.result.createObjectStore("runs", { keyPath: "id" });
          open.result.createObjectStore("items");
        };
        open.onerror = () => reject(open.error ?? new Error("cannot open"));
        open.onsuccess = () => {
          const transaction = open.result.transaction(["runs", "items"], "readonly");
          const runs = transaction.objectStore("runs").getAllKeys();
          const items = transaction.objectStore("items").count();
          transaction.oncomplete = () => {
            open.result.close();
            resolve({ runs: (runs.result as string[]).sort(), items: items.result });
          };
          transaction.onerror = () => reject(transaction.error ?? new Error("cannot read"));
        };
      }),
  );
}

/** Writes run records straight into the console's IndexedDB, as another tab (or an earlier page) left them. */
function plant(page: Page, records: readonly { id: string; touchedAt: number; items: number }[]): Promise<void> {
  return page.evaluate(
    (planted) =>
      new Promise<void>((resolve, reject) => {
        const open = indexedDB.open("golem-stream-console", 1);
        open.onupgradeneeded = () => {
          open.result.createObjectStore("runs", { keyPath: "id" });
          open.result.createObjectStore("items");
        };
        open.onerror = () => reject(open.error ?? new Error("cannot open"));
        open.onsuccess = () => {
          const transaction = open.result.transaction(["runs", "items"], "readwrite");
          for (const { id, touchedAt, items } of planted) {
            const state = { sessionToken: "gai1_planted", outputCursors: [], selector: {}, idempotencyKey: id };
            transaction.objectStore("runs").put({
              id,
              title: id,
              state,
              cursors: {},
              streams: { s: { token: "s", label: "s", kind: "values", stored: items, storedBytes: 0 } },
              touchedAt,
            });
            for (let index = 0; index < items; index++) transaction.objectStore("items").put(`item ${index}`, [id, "s", index]);
          }
          transaction.oncomplete = () => {
            open.result.close();
            resolve();
          };
          transaction.onerror = () => reject(transaction.error ?? new Error("cannot write"));
        };
      }),
    records,
  );
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

  it("a page of an origin the server does not allow is told so at sign-in, instead of retrying for minutes", async () => {
    const { page, context } = await openConsole(foreign.origin);
    try {
      await signIn(page, TOKEN);
      const error = page.locator("#sign-in-error");
      await error.waitFor({ state: "visible" });
      expect(await error.textContent()).toBe(
        `This server does not let pages of ${foreign.origin} open sessions. Open the console at the address golem-stream serve printed, or start serve with --allow-origin ${foreign.origin}.`,
      );
      expect(await page.locator("#workspace").isHidden()).toBe(true);
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
      await startCount(page, to, 25);
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

  it("a second run replaces the first: the page, and a reload mid-run, show only the second", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "count");
      await startCount(page, 100000, 20);
      await page.waitForFunction(() => document.querySelectorAll("#streams ol.items li").length >= 5);
      await page.getByLabel("to", { exact: true }).fill("60");
      await page.getByLabel("delayMs", { exact: true }).fill("25");
      // The first run's list starts with "0" too: mark it, so the wait below sees the second run's.
      await page.evaluate(() => document.querySelector("#streams ol.items")?.setAttribute("data-first-run", ""));
      await page.getByRole("button", { name: "Start" }).click();
      await page.waitForFunction(() => document.querySelector("#streams ol.items:not([data-first-run]) li")?.textContent === "0");
      expect((await stored(page)).runs).toHaveLength(1); // the first run's records went with it
      await page.reload();
      await page.waitForSelector("body[data-ready=true]");
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
      expect(await panels(page)).toEqual([{ name: "result", items: Array.from({ length: 60 }, (_, i) => String(i)) }]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("a run's records are removed from IndexedDB once it has ended, and a reload then resumes nothing", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "count");
      await startCount(page, 40, 25);
      await page.waitForFunction(() => document.querySelectorAll("#streams ol.items li").length >= 5);
      const during = await stored(page);
      expect(during.runs).toHaveLength(1); // stored while it runs, for a reload
      // The outcome is shown once the records are gone.
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
      expect(await items(page)).toEqual(Array.from({ length: 40 }, (_, i) => String(i)));
      expect(await stored(page)).toEqual({ runs: [], items: 0 });
      await page.reload();
      await page.waitForSelector("body[data-ready=true]");
      expect(await page.locator("#run").isHidden()).toBe(true);
      expect(await stored(page)).toEqual({ runs: [], items: 0 });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("signing out mid-run removes the run's records before the sign-in form comes back", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "count");
      await startCount(page, 100000, 20);
      await page.waitForFunction(() => document.querySelectorAll("#streams ol.items li").length >= 5);
      expect((await stored(page)).runs).toHaveLength(1);
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.locator("#sign-in").waitFor({ state: "visible" });
      expect(await stored(page)).toEqual({ runs: [], items: 0 });
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("at start, the page sweeps stored runs no open tab holds, and spares one another tab shows and one just written", async () => {
    if (startFailure !== undefined) throw startFailure;
    const context = await browser.newContext();
    try {
      // Another tab of the origin: it plants the records, then holds the lock of the run it "shows".
      const other = await context.newPage();
      await other.goto(`${server.httpUrl}/no-page-here`);
      const hour = 60 * 60 * 1000;
      const now = await other.evaluate(() => Date.now());
      await plant(other, [
        { id: "closed-tab", touchedAt: now - hour, items: 3 },
        { id: "open-tab", touchedAt: now - hour, items: 2 },
        { id: "reloading-tab", touchedAt: now, items: 1 },
      ]);
      await other.evaluate(async () => {
        void navigator.locks.request("golem-stream-console:run:open-tab", () => new Promise(() => undefined));
        await navigator.locks.query();
      });
      expect((await stored(other)).runs).toEqual(["closed-tab", "open-tab", "reloading-tab"]);
      const page = await context.newPage();
      await page.goto(`${server.httpUrl}/`);
      await page.waitForSelector("body[data-ready=true]");
      expect(await stored(page)).toEqual({ runs: ["open-tab", "reloading-tab"], items: 3 });
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
      await page
        .getByLabel("data", { exact: true })
        .setInputFiles({ name: "sample.bin", mimeType: "application/octet-stream", buffer: bytes });
      await page.getByRole("button", { name: "Start" }).click();
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 60_000 });
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      expect(JSON.parse((await page.locator("#result").textContent()) ?? "")).toEqual({ bytes: String(bytes.length), sha256 });
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("the network is cut mid-stream and then offline for a while: the console reconnects by itself, every item once", async () => {
    // WebSocket connections are cut after 3000, then 6000 bytes. After the first cut the network
    // is down for the next three connections (about 1.4 s of the page's backoff): it keeps retrying.
    let webSockets = 0;
    network.setPlan((connection) => {
      if (network.cuts === 1 && network.refused < 3) return { refuse: true };
      return connection.webSocket ? { cutAfter: [3000, 6000][webSockets++] } : undefined;
    });
    const { page, context, errors } = await openConsole(network.origin);
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "count");
      const to = 400;
      await startCount(page, to, 5);
      await page.locator("#status", { hasText: "connection lost" }).waitFor({ timeout: 30_000 });
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 60_000 });
      expect(network.cuts).toBe(2);
      expect(network.refused).toBe(3);
      expect(await items(page)).toEqual(Array.from({ length: to }, (_, i) => String(i)));
      expect(errors.filter((error) => !/WebSocket|ERR_CONNECTION|net::/.test(error))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("groups: nested streams appear as they are announced, each named after the item that announced it", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "groups");
      await page.getByLabel("groups", { exact: true }).fill("3");
      await page.getByLabel("per", { exact: true }).fill("4");
      await page.getByRole("button", { name: "Start" }).click();
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 60_000 });
      const shown = await panels(page);
      expect(shown[0]).toEqual({
        name: "result",
        items: [0, 1, 2].map((g) => JSON.stringify({ name: `group-${g}`, items: `⟨stream result[${g}].items⟩` })),
      });
      expect(shown.slice(1)).toEqual([0, 1, 2].map((g) => ({ name: `result[${g}].items`, items: ["0", "1", "2", "3"] })));
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("split: the bytes stream shows its size and downloads exactly, the lines stream its lines", async () => {
    const { page, context, errors } = await openConsole();
    try {
      await signIn(page, TOKEN);
      await chooseMethod(page, "split");
      const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} of the console's split`);
      const text = `${lines.join("\n")}\n`;
      await page.getByLabel("data", { exact: true }).setInputFiles({ name: "book.txt", mimeType: "text/plain", buffer: Buffer.from(text) });
      await page.getByRole("button", { name: "Start" }).click();
      await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 60_000 });
      const shown = await panels(page);
      expect(shown.map((panel) => panel.name)).toEqual(["upper", "lines"]);
      expect(shown[1]!.items).toEqual(lines);
      const upper = page.locator("#streams .stream").first();
      expect(await upper.locator(".progress").textContent()).toMatch(new RegExp(`^\\d+ batches · ${(text.length / 1024).toFixed(1)} KiB`));
      const [download] = await Promise.all([page.waitForEvent("download"), upper.getByRole("link", { name: "download" }).click()]);
      const body = await new Promise<Buffer>((resolve, reject) => {
        void download.createReadStream().then((stream) => {
          const chunks: Buffer[] = [];
          stream.on("data", (chunk: Buffer) => chunks.push(chunk));
          stream.on("end", () => resolve(Buffer.concat(chunks)));
          stream.on("error", reject);
        }, reject);
      });
      expect(body.toString()).toBe(text.toUpperCase());
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

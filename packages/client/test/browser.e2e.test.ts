/**
 * The client in a real browser: Debian's Chromium (playwright-core) loads a
 * page with the package bundled for the browser, and calls the real server on
 * loopback with the default transport (the global WebSocket, the bearer in a
 * subprotocol entry, the server's browser extension on for the page's origin).
 * Fails with the reason, never skips, when no browser can be started.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type ResumeState } from "../src/index.js";
import { bundlePage, launchBrowser, servePage, type PageServer } from "./support/browser.js";
import { firstStream } from "./support/demo.js";
import { endOf } from "./support/recording.js";
import { startServer, TOKEN } from "./support/embedded.js";
import { startTcpProxy } from "@golem-stream/test-support";

let browser: Browser;
let pageServer: PageServer;
let server: Awaited<ReturnType<typeof startServer>>;
let page: Page;
/** Why the browser or its page could not be started: every test fails with it (a failed beforeAll only skips them). */
let startFailure: Error | undefined;

beforeAll(async () => {
  pageServer = await servePage(await bundlePage());
  server = await startServer({ browsers: { allowedOrigins: [pageServer.origin] } });
  try {
    browser = await launchBrowser();
    page = await browser.newPage();
    page.on("pageerror", (error) => console.error("page error:", error));
    await page.goto(`${pageServer.origin}/`);
    await page.waitForFunction("window.scenariosReady === true");
  } catch (error) {
    startFailure = error instanceof Error ? error : new Error(String(error));
    console.error(startFailure.message);
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await pageServer?.close();
});

/** Runs one scenario of test/browser-page/page.js in the page (a string, so nothing of this file is serialized). */
async function scenario<T>(name: string, args: object): Promise<T> {
  if (startFailure !== undefined) throw startFailure;
  return page.evaluate(`window.scenarios.${name}(${JSON.stringify(args)})`) as Promise<T>;
}

describe("the client in Chromium", () => {
  it("digest of a 64 MiB Blob: the server's SHA-256 equals crypto.subtle's in the page", async () => {
    const size = 64 * 1024 * 1024;
    const {
      local,
      server: fields,
      size: sent,
    } = await scenario<{ local: string; server: string[]; size: number }>("digest", { url: server.httpUrl, token: TOKEN, size });
    expect(sent).toBe(size);
    expect(local).toMatch(/^[0-9a-f]{64}$/);
    expect(fields).toEqual([String(size), local]);
  }, 180_000);

  it("reverse of text items, read with for await and through readable()", async () => {
    const items = Array.from({ length: 300 }, (_, i) => `item ${i} ${"é😀".repeat(i % 5)}`);
    const reversed = items.map((item) => Array.from(item).reverse().join(""));
    const { iterated, read } = await scenario<{ iterated: string[]; read: string[] }>("reverse", {
      url: server.httpUrl,
      token: TOKEN,
      items,
    });
    expect(iterated).toEqual(reversed);
    expect(read).toEqual(reversed);
  });

  it("split: both output streams of the result record, read at once", async () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} of the split test`);
    const text = `${lines.join("\n")}\n`;
    const answer = await scenario<{ upper: string; lines: string[]; coordinates: string[] }>("split", {
      url: server.httpUrl,
      token: TOKEN,
      text,
    });
    expect(answer.upper).toBe(text.toUpperCase());
    expect(answer.lines).toEqual(lines);
    expect(answer.coordinates).toEqual(["/value/fields/0", "/value/fields/1"]);
  });

  it("groups: nested streams announced by the items of a stream", async () => {
    const groups = await scenario<{ name: string; items: number[] }[]>("groups", { url: server.httpUrl, token: TOKEN, groups: 3, per: 4 });
    expect(groups.map((group) => group.items)).toEqual([
      [0, 1, 2, 3],
      [0, 1, 2, 3],
      [0, 1, 2, 3],
    ]);
    expect(new Set(groups.map((group) => group.name)).size).toBe(3);
  });

  it("the network path is cut mid-stream, twice: the page resumes and sees every item once", async () => {
    // Byte budgets per connection (both directions): the first two connections die mid-output.
    const budgets = [40_000, 80_000];
    const proxy = await startTcpProxy({ upstream: server.url, plan: ({ index }) => ({ cutAfter: budgets[index] }) });
    try {
      const to = 5000;
      const { items, reconnects } = await scenario<{ items: number[]; reconnects: string[] }>("count", {
        url: proxy.url.replace(/^ws:/, "http:"),
        token: TOKEN,
        to,
      });
      expect(proxy.cuts).toBe(2);
      expect(reconnects.length).toBeGreaterThanOrEqual(2);
      expect(items).toEqual(Array.from({ length: to }, (_, i) => i));
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it("cancel() while the server is still sending: delivered, and a takeover from Node sees the output ended cancelled", async () => {
    const { outcome, state } = await scenario<{ outcome: string; state: ResumeState }>("cancel", {
      url: server.httpUrl,
      token: TOKEN,
      to: 100_000,
    });
    expect(outcome).toBe("delivered");
    const second = createClient({ url: server.url, token: TOKEN }).takeover(state);
    expect(await endOf((await firstStream(second)).values())).toMatchObject({ kind: "stream-cancelled", reason: "cancelled" });
    expect(await second.finished).toEqual({ kind: "success" });
  });

  it("a wrong token fails at once as rejected/unauthenticated (the refusal close), not after every reconnect", async () => {
    const answer = await scenario<Record<string, unknown>>("wrongToken", { url: server.httpUrl });
    expect(answer).toEqual({ outcome: "failed", kind: "rejected", code: "unauthenticated", reconnects: 0 });
  });
});

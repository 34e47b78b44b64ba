/**
 * The web console on a catalogue of one's own (`startEmbeddedServer({ agents
 * })`, what `serve --agents` runs), in a real browser: with that application
 * loaded, it lists the user's agent types, builds their forms from
 * their schemas (a file picker for `stream<u8>`, fields for the
 * constructor) and shows the output stream. Fails with the reason, never
 * skips, when no browser can be started.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { defineAgentType, defineCatalogue, implement, startEmbeddedServer, t, type EmbeddedServer } from "@golem-stream/server";
import { consoleHandler } from "../dist/node/index.js";
import { launchBrowser } from "./support/browser.js";

const TOKEN = "console-agents-token";

const shouter = defineAgentType({
  name: "shouter",
  constructor: t.record({ marks: t.u8() }),
  methods: {
    shout: { params: t.record({ text: t.stream(t.u8()) }), result: t.stream(t.string()) },
  },
});

/** Binary items whose MIME type would run as a page, were the console to render them in its origin. */
const publisher = defineAgentType({
  name: "publisher",
  constructor: t.record({}),
  methods: {
    publish: { params: t.record({ title: t.string() }), result: t.stream(t.binary()) },
  },
});

const PAGE = (title: string): string => `<!doctype html><title>${title}</title><script>document.title = "ran in the console";</script>`;

const agents = defineCatalogue({
  applications: {
    loud: {
      staging: [
        implement(shouter, {
          async shout(ctx, { text }) {
            return (async function* () {
              let all = "";
              for await (const chunk of text) all += Buffer.from(chunk).toString("utf8");
              for (const line of all.split("\n").filter((line) => line !== ""))
                yield line.toUpperCase() + "!".repeat(ctx.constructorArgs.marks);
            })();
          },
        }),
      ],
    },
    press: {
      prod: [
        implement(publisher, {
          async publish(_ctx, { title }) {
            return (function* () {
              yield { bytes: new TextEncoder().encode(PAGE(title)), mimeType: "text/html" };
            })();
          },
        }),
      ],
    },
  },
});

let dataDir: string;
let server: EmbeddedServer;
let browser: Browser | undefined;
let startFailure: Error | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "golem-stream-console-agents-"));
  server = await startEmbeddedServer({
    dataDir,
    tokens: [TOKEN],
    synchronous: "normal",
    agents,
    pages: consoleHandler(),
    browsers: { allowedOrigins: [], allowListeningOrigins: true },
  });
  try {
    browser = await launchBrowser();
  } catch (error) {
    startFailure = error instanceof Error ? error : new Error(String(error));
  }
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

it("opened at ?application=…&environment=… (the link serve --agents prints), the console loads that catalogue at sign-in", async () => {
  if (startFailure !== undefined || browser === undefined) throw startFailure ?? new Error("no browser");
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await page.goto(`${server.httpUrl}/?application=loud&environment=staging`);
    await page.waitForSelector("body[data-ready=true]");
    expect(await page.locator("#application").inputValue()).toBe("loud");
    expect(await page.locator("#environment").inputValue()).toBe("staging");
    await page.getByLabel("Bearer token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#choosers").waitFor({ state: "visible" });
    expect(await page.locator("#agent-type option").allTextContents()).toEqual(["shouter"]);
  } finally {
    await context.close();
  }
});

it("with the module's application loaded, the console lists its agent type, renders its forms and streams its output", async () => {
  if (startFailure !== undefined || browser === undefined) throw startFailure ?? new Error("no browser");
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  try {
    await page.goto(`${server.httpUrl}/`);
    await page.waitForSelector("body[data-ready=true]");
    await page.getByLabel("Bearer token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#workspace").waitFor({ state: "visible" });
    // The console opens on the demo's application, which this server does not serve.
    await page.locator("#catalogue-error", { hasText: 'no application "demo"' }).waitFor();
    await page.locator("#application").fill("loud");
    await page.locator("#environment").fill("staging");
    await page.getByRole("button", { name: "Load agent types" }).click();
    await page.locator("#choosers").waitFor({ state: "visible" });
    expect(await page.locator("#agent-type option").allTextContents()).toEqual(["shouter"]);
    await page.locator("#agent-type").selectOption("shouter");
    await page.locator("#method").selectOption("shout");
    await page.getByLabel("marks", { exact: true }).fill("2");
    await page
      .getByLabel("text", { exact: true })
      .setInputFiles({ name: "words.txt", mimeType: "text/plain", buffer: Buffer.from("hey\nyou\n") });
    await page.getByRole("button", { name: "Start" }).click();
    await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
    expect(await page.locator("#streams .stream").first().locator("ol.items li").allTextContents()).toEqual(["HEY!!", "YOU!!"]);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
}, 60_000);

it("a binary item of type text/html is offered as a download of application/octet-stream, never rendered in the console's origin", async () => {
  if (startFailure !== undefined || browser === undefined) throw startFailure ?? new Error("no browser");
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  // The page's CSP lets it fetch nothing but its origin: the Blobs behind its URLs are noted as they are made.
  await page.addInitScript(() => {
    const blobs = new Map<string, Blob>();
    const make = URL.createObjectURL.bind(URL);
    URL.createObjectURL = (object: Blob | MediaSource) => {
      const url = make(object);
      if (object instanceof Blob) blobs.set(url, object);
      return url;
    };
    (globalThis as { blobOf?: (url: string) => Blob | undefined }).blobOf = (url) => blobs.get(url);
  });
  try {
    await page.goto(`${server.httpUrl}/?application=press&environment=prod`);
    await page.waitForSelector("body[data-ready=true]");
    await page.getByLabel("Bearer token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#choosers").waitFor({ state: "visible" });
    await page.locator("#agent-type").selectOption("publisher");
    await page.locator("#method").selectOption("publish");
    await page.getByLabel("title", { exact: true }).fill("hello");
    await page.getByRole("button", { name: "Start" }).click();
    await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
    const item = page.locator("#streams .stream ol.items li").first();
    // The agent's type is shown as text; the link is a download of plain bytes.
    expect(await item.textContent()).toContain("text/html");
    const link = item.getByRole("link", { name: "download" });
    const seen = await link.evaluate(async (anchor: HTMLAnchorElement) => {
      const blob = (globalThis as { blobOf?: (url: string) => Blob | undefined }).blobOf?.(anchor.href);
      if (blob === undefined) throw new Error(`no Blob behind ${anchor.href}`);
      return { type: anchor.type, download: anchor.getAttribute("download"), blobType: blob.type, text: await blob.text() };
    });
    expect(seen).toEqual({
      type: "application/octet-stream",
      download: "item-0",
      blobType: "application/octet-stream",
      text: PAGE("hello"),
    });
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    expect(download.suggestedFilename()).toBe("item-0");
    // Nothing was navigated to or run: the console is still the page, under its own title.
    expect(page.url()).toBe(`${server.httpUrl}/?application=press&environment=prod`);
    expect(await page.title()).toBe("golem-stream console");
    expect(context.pages()).toEqual([page]);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
}, 60_000);

/**
 * The forms made from schemas, in Chromium: a catalogue of its own (a
 * `createSessionServer` with a `StaticAgentHost`) whose methods take a
 * variant, a list, an enum, an option, a u64, a tuple and flags (`describe`),
 * a binary (`upload`) and an f32 (`scale`), and return the parameters they
 * received as JSON. What a person enters through the controls must arrive as
 * exactly that native value; a wrong entry is named before anything is sent.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createSessionServer,
  Keyring,
  MemorySessionStore,
  StaticAgentHost,
  type MethodImplementation,
  type SessionServer,
} from "@golem-stream/server";
import type { JsonObject } from "@golem-stream/wire";
import { consoleHandler } from "../dist/node/index.js";
import { launchBrowser } from "./support/browser.js";

const TOKEN = "forms-token";
const t = {
  string: { kind: "string", value: {} },
  record: (...fields: [string, JsonObject][]): JsonObject => ({
    kind: "record",
    value: { fields: fields.map(([name, body]) => ({ name, body })) },
  }),
};
const PARAMETERS = t.record(
  [
    "shape",
    {
      kind: "variant",
      value: {
        cases: [
          { name: "circle", payload: { kind: "f64", value: {} } },
          { name: "square", payload: { kind: "u32", value: {} } },
          { name: "none" },
        ],
      },
    },
  ],
  ["tags", { kind: "list", value: { element: t.string } }],
  ["color", { kind: "enum", value: { cases: ["red", "green", "blue"] } }],
  ["note", { kind: "option", value: { inner: t.string } }],
  ["big", { kind: "u64", value: {} }],
  [
    "pair",
    {
      kind: "tuple",
      value: {
        elements: [
          { kind: "bool", value: {} },
          { kind: "s8", value: {} },
        ],
      },
    },
  ],
  ["access", { kind: "flags", value: { flags: ["read", "write"] } }],
);

/** A method that returns the parameters it received, as JSON. */
const echo: MethodImplementation = async (ctx) => ({ kind: "string", value: JSON.stringify(ctx.parameters) });

let server: SessionServer;
let url: string;
let browser: Browser | undefined;
let startFailure: Error | undefined;

beforeAll(async () => {
  const host = new StaticAgentHost({
    forms: {
      default: [
        {
          name: "shapes",
          constructorParameters: { root: t.record() },
          methods: [
            { name: "describe", parameters: { root: PARAMETERS }, result: { root: t.string } },
            {
              name: "upload",
              parameters: { root: t.record(["file", { kind: "binary", value: { restrictions: {} } }]) },
              result: { root: t.string },
            },
            { name: "scale", parameters: { root: t.record(["ratio", { kind: "f32", value: {} }]) }, result: { root: t.string } },
          ],
          config: [],
          implementations: { describe: echo, upload: echo, scale: echo },
        },
      ],
    },
  });
  server = createSessionServer({
    store: new MemorySessionStore(),
    host,
    keyring: Keyring.generate(),
    authenticator: (bearer) => (bearer === TOKEN ? { account: "local", principal: "forms" } : undefined),
    pages: consoleHandler(),
    browsers: { allowedOrigins: [], allowListeningOrigins: true },
  });
  url = (await server.listen(0, "127.0.0.1")).httpUrl;
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
});

async function openForm(method = "describe"): Promise<Page> {
  if (startFailure !== undefined || browser === undefined) throw startFailure ?? new Error("no browser");
  const page = await browser.newPage();
  await page.goto(`${url}/`);
  await page.waitForSelector("body[data-ready=true]");
  await page.getByLabel("Bearer token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  // This server has no demo application: signed in, the console says so and asks for another.
  await page
    .locator("#catalogue-error", { hasText: 'There is no application "demo" with environment "default" on this server.' })
    .waitFor();
  await page.getByLabel("Application").fill("forms");
  await page.getByRole("button", { name: "Load agent types" }).click();
  await page.locator("#method").selectOption(method);
  return page;
}

/** The fieldset whose legend is `legend`. */
const fieldset = (page: Page, legend: string) =>
  page.locator("fieldset", { has: page.locator(":scope > legend", { hasText: new RegExp(`^${legend}`) }) });

it("every kind of control reads back the native value the method receives", async () => {
  const page = await openForm();
  try {
    const shape = fieldset(page, "shape");
    await shape.getByLabel("case").selectOption("circle");
    await shape.getByLabel("circle").fill("1.5");
    const tags = fieldset(page, "tags");
    await tags.getByRole("button", { name: "Add to tags" }).click();
    await tags.getByRole("button", { name: "Add to tags" }).click();
    await tags.getByLabel("0").fill("x");
    await tags.getByLabel("1").fill("y é");
    await page.getByLabel("color").selectOption("green");
    const note = fieldset(page, "note");
    await note.getByLabel("present").check();
    await note.getByLabel("value").fill("hi");
    await page.getByLabel("big").fill("18446744073709551615");
    const pair = fieldset(page, "pair");
    await pair.getByLabel("0").check();
    await pair.getByLabel("1").fill("-5");
    await fieldset(page, "access").getByLabel("write").check();
    await page.getByRole("button", { name: "Start" }).click();
    await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
    expect(JSON.parse((await page.locator("#result").textContent()) ?? "")).toEqual({
      kind: "record",
      value: {
        fields: [
          { kind: "variant", value: { case: 0, payload: { kind: "f64", value: 1.5 } } },
          {
            kind: "list",
            value: {
              elements: [
                { kind: "string", value: "x" },
                { kind: "string", value: "y é" },
              ],
            },
          },
          { kind: "enum", value: { case: 1 } },
          { kind: "option", value: { inner: { kind: "string", value: "hi" } } },
          { kind: "u64", value: "18446744073709551615" },
          {
            kind: "tuple",
            value: {
              elements: [
                { kind: "bool", value: true },
                { kind: "s8", value: -5 },
              ],
            },
          },
          { kind: "flags", value: { bits: [false, true] } },
        ],
      },
    });
  } finally {
    await page.close();
  }
});

it("a value outside its kind is named before anything is sent", async () => {
  const page = await openForm();
  try {
    await fieldset(page, "pair").getByLabel("1").fill("300");
    await page.getByRole("button", { name: "Start" }).click();
    const error = page.locator("#invoke-error");
    await error.waitFor({ state: "visible" });
    expect(await error.textContent()).toBe("parameters.pair[1]: a whole number from -128 to 127");
    expect(await page.locator("#run").isHidden()).toBe(true);
  } finally {
    await page.close();
  }
});

/** Starts the run and returns the parameters the method received. */
async function received(page: Page): Promise<unknown> {
  await page.getByRole("button", { name: "Start" }).click();
  await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
  return JSON.parse((await page.locator("#result").textContent()) ?? "");
}

/** Starts the run and returns the error the form names instead; nothing was sent. */
async function refused(page: Page): Promise<string | null> {
  await page.getByRole("button", { name: "Start" }).click();
  const error = page.locator("#invoke-error");
  await error.waitFor({ state: "visible" });
  expect(await page.locator("#run").isHidden()).toBe(true);
  return error.textContent();
}

/** The upload method's parameters when its file is `a.txt` ("hey", text/plain). */
const HEY = { kind: "record", value: { fields: [{ kind: "binary", value: { bytes: [...Buffer.from("hey")], mimeType: "text/plain" } }] } };

/**
 * Chooses `a.txt` for the upload form's file and presses Start while the page's read of the file
 * is held back; runs `duringRead`, lets the read go, and returns the parameters the method received.
 */
async function startWhileFileUnread(page: Page, duringRead: () => Promise<unknown> = async () => undefined): Promise<unknown> {
  await page.evaluate(() => {
    const read = Blob.prototype.arrayBuffer;
    const pending: (() => void)[] = [];
    Object.assign(window, { releaseReads: () => pending.splice(0).forEach((go) => go()), pendingReads: () => pending.length });
    Blob.prototype.arrayBuffer = function (this: Blob) {
      if (!(this instanceof File)) return read.call(this);
      return new Promise<void>((go) => pending.push(go)).then(() => read.call(this));
    };
  });
  await page.getByLabel("file").setInputFiles({ name: "a.txt", mimeType: "text/plain", buffer: Buffer.from("hey") });
  await page.getByRole("button", { name: "Start" }).click();
  // A read under way, or (a build that read the file earlier) the run already shown.
  await page.waitForFunction(
    () => (window as unknown as { pendingReads(): number }).pendingReads() > 0 || !document.querySelector("#run")?.hasAttribute("hidden"),
  );
  await duringRead();
  await page.evaluate(() => (window as unknown as { releaseReads(): void }).releaseReads());
  await page.locator("#outcome", { hasText: "success" }).waitFor({ timeout: 30_000 });
  return JSON.parse((await page.locator("#result").textContent()) ?? "");
}

it("a binary is the chosen file's bytes and MIME type, read when Start is pressed, however long the read takes", async () => {
  const page = await openForm("upload");
  try {
    expect(await startWhileFileUnread(page)).toEqual(HEY);
  } finally {
    await page.close();
  }
});

it("the run is of the method Start was pressed for, when another is chosen while its file is read", async () => {
  const page = await openForm("upload");
  try {
    expect(await startWhileFileUnread(page, () => page.locator("#method").selectOption("scale"))).toEqual(HEY);
    expect(await page.locator("#run").textContent()).toContain("upload");
  } finally {
    await page.close();
  }
});

it("a binary whose picker was cleared is named as missing, not sent with the file chosen before", async () => {
  const page = await openForm("upload");
  try {
    const picker = page.getByLabel("file");
    await picker.setInputFiles({ name: "a.bin", mimeType: "application/x-a", buffer: Buffer.from([1, 2, 3]) });
    await picker.setInputFiles([]);
    expect(await refused(page)).toBe("parameters.file: choose a file");
    await picker.setInputFiles({ name: "b.csv", mimeType: "text/csv", buffer: Buffer.from([4, 5]) });
    expect(await received(page)).toEqual({
      kind: "record",
      value: { fields: [{ kind: "binary", value: { bytes: [4, 5], mimeType: "text/csv" } }] },
    });
  } finally {
    await page.close();
  }
});

it("an f32 outside f32's range is named before anything is sent; its largest value is taken", async () => {
  const page = await openForm("scale");
  try {
    await page.getByLabel("ratio").fill("1e39");
    expect(await refused(page)).toBe("parameters.ratio: a number from -3.4028235e38 to 3.4028235e38");
    await page.getByLabel("ratio").fill("-3.4028235e38");
    expect(await received(page)).toEqual({ kind: "record", value: { fields: [{ kind: "f32", value: -3.4028235e38 }] } });
  } finally {
    await page.close();
  }
});

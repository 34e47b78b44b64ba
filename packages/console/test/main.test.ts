/**
 * The page's start and sign-out (main.ts) in happy-dom, on the page's own HTML, with the
 * catalogue's `fetch` scripted, an in-memory IndexedDB and in-memory Web Locks: what a start
 * sweeps, which stored run it restores or forgets, and what signing out removes. Each test loads
 * main.ts anew (it starts the page when imported).
 */
import "fake-indexeddb/auto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { deleteRuns, listRuns, saveRun, type RunRecord } from "../src/web/run-store.js";
import { until } from "./support/dom.js";
import { FakeLocks, installLocks } from "./support/fake-locks.js";

const TOKEN_KEY = "golem-stream-console:token";
const RUN_KEY = "golem-stream-console:run";
// A path, not a URL: the environment's URL is happy-dom's, which node:fs does not take.
const HTML = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "../src/web/index.html"), "utf8");
const BODY = HTML.slice(HTML.indexOf("<body>") + "<body>".length, HTML.indexOf("</body>"));
const HOUR = 60 * 60 * 1000;
const STATE = { sessionToken: "gai1_x", outputCursors: [], selector: {}, idempotencyKey: "k" } as never;

const runIds = async (): Promise<string[]> => (await listRuns()).map((stored) => (stored as RunRecord).id).sort();
const $ = (id: string): HTMLElement => document.getElementById(id)!;

/**
 * Answers the console's two requests: the origin check and the catalogue (`status` 401: the token
 * is refused; another status answers `body`, or a catalogue of nothing).
 */
function serveCatalogue(status = 200, body: unknown = status === 401 ? { code: "unauthenticated" } : { agentTypes: [] }): void {
  vi.stubGlobal("fetch", (_url: string, init?: RequestInit) =>
    Promise.resolve(init?.method === "OPTIONS" ? new Response(null, { status: 204 }) : new Response(JSON.stringify(body), { status })),
  );
}

/** Signs in through the form, as a person does, and resolves once the page shows the outcome. */
async function signInWith(token: string): Promise<void> {
  ($("token") as HTMLInputElement).value = token;
  $("sign-in-form").dispatchEvent(new Event("submit", { cancelable: true }));
  await until(document.body, () => !$("sign-in-error").hidden || !$("workspace").hidden);
}

/** Loads main.ts (the page starts) and resolves once it says it is ready. */
async function boot(): Promise<void> {
  vi.resetModules();
  await import("../src/web/main.js");
  await until(document.body, () => document.body.dataset["ready"] === "true");
}

/** A stored record as another tab (or an earlier page) left it, last written `age` ago. */
async function leftBehind(id: string, age: number, over: Partial<RunRecord> = {}): Promise<void> {
  await saveRun({ id, title: id, state: STATE, cursors: {}, streams: {}, ...over });
  // saveRun stamps the record now: stamped again, as old as asked.
  await new Promise<void>((resolve, reject) => {
    const open = indexedDB.open("golem-stream-console", 1);
    open.onsuccess = () => {
      const transaction = open.result.transaction("runs", "readwrite");
      const runs = transaction.objectStore("runs");
      const read = runs.get(id);
      read.onsuccess = () => runs.put({ ...(read.result as RunRecord), touchedAt: Date.now() - age });
      transaction.oncomplete = () => {
        open.result.close();
        resolve();
      };
      transaction.onerror = () => reject(transaction.error ?? new Error("cannot write"));
    };
  });
}

beforeEach(() => {
  document.body.innerHTML = BODY;
  delete document.body.dataset["ready"];
  installLocks(new FakeLocks());
});

afterEach(async () => {
  await deleteRuns(await runIds());
  sessionStorage.clear();
  vi.unstubAllGlobals();
  installLocks(undefined);
});

it("signed out at start: sweeps the runs no tab holds, forgets the tab's own, and shows the sign-in form", async () => {
  await leftBehind("abandoned", HOUR);
  await leftBehind("just-written", 0);
  await leftBehind("mine", HOUR);
  sessionStorage.setItem(RUN_KEY, "mine");
  serveCatalogue();
  await boot();
  expect(await runIds()).toEqual(["just-written"]);
  expect(sessionStorage.getItem(RUN_KEY)).toBeNull();
  expect($("sign-in").hidden).toBe(false);
  expect($("workspace").hidden).toBe(true);
});

it("signed in at a reload: spares the tab's own run from the sweep and restores it", async () => {
  await leftBehind("mine", HOUR, { outcome: { ok: true, text: "success" } });
  await leftBehind("abandoned", HOUR);
  sessionStorage.setItem(TOKEN_KEY, "token");
  sessionStorage.setItem(RUN_KEY, "mine");
  serveCatalogue();
  await boot();
  expect($("workspace").hidden).toBe(false);
  expect($("run").hidden).toBe(false);
  expect($("run-title").textContent).toBe("mine");
  expect($("outcome").textContent).toBe("success");
  // It had ended: shown once more, then removed like the orphan.
  expect(await runIds()).toEqual([]);
  expect(sessionStorage.getItem(RUN_KEY)).toBeNull();
});

it("a tab whose stored run is gone shows no run", async () => {
  sessionStorage.setItem(TOKEN_KEY, "token");
  sessionStorage.setItem(RUN_KEY, "vanished");
  serveCatalogue();
  await boot();
  expect($("run").hidden).toBe(true);
  expect(sessionStorage.getItem(RUN_KEY)).toBeNull();
});

it("a token refused at a reload signs the tab out, and its run goes with it", async () => {
  await leftBehind("mine", 0);
  sessionStorage.setItem(TOKEN_KEY, "stale");
  sessionStorage.setItem(RUN_KEY, "mine");
  serveCatalogue(401);
  await boot();
  expect($("sign-in-error").textContent).toBe("The server refused this token (unauthenticated). Check it and sign in again.");
  expect(await runIds()).toEqual([]);
  expect(sessionStorage.length).toBe(0);
});

it("signing out removes the tab's run and its token, then shows the sign-in form", async () => {
  // Written just now and in this tab: neither the sweep nor the restore (it was never started) touches it first.
  await leftBehind("other-tab", 0);
  sessionStorage.setItem(TOKEN_KEY, "token");
  serveCatalogue();
  await boot();
  await leftBehind("mine", 0);
  sessionStorage.setItem(RUN_KEY, "mine");
  $("sign-out").click();
  await until(document.body, () => !$("sign-in").hidden);
  expect(await runIds()).toEqual(["other-tab"]);
  expect(sessionStorage.length).toBe(0);
  expect($("workspace").hidden).toBe(true);
});

describe("signing in with a new token keeps it only once the server accepted it", () => {
  it.each([
    ["overloaded (an address throttled after failed authentications)", 503, { code: "overloaded" }, "HTTP 503, overloaded"],
    ["an internal error", 500, { code: "internal-error" }, "HTTP 500, internal-error"],
    ["a proxy's answer without a code", 502, { message: "bad gateway" }, "HTTP 502"],
    ["a forbidden with another status", 401, { code: "forbidden" }, "Forbidden."],
    ["a not-found with another status", 503, { code: "not-found" }, 'There is no application "demo"'],
  ])("%s: stays signed out, keeps nothing and says why", async (_what, status, body, shown) => {
    serveCatalogue();
    await boot();
    serveCatalogue(status, body);
    await signInWith("maybe-wrong");
    expect($("sign-in-error").hidden).toBe(false);
    expect($("sign-in-error").textContent).toContain(shown);
    expect($("sign-in").hidden).toBe(false);
    expect($("workspace").hidden).toBe(true);
    expect(sessionStorage.getItem(TOKEN_KEY)).toBeNull();
  });

  it("the throttled answer says what it is", async () => {
    serveCatalogue();
    await boot();
    serveCatalogue(503, { code: "overloaded" });
    await signInWith("maybe-wrong");
    expect($("sign-in-error").textContent).toBe(
      "The server is busy, or refuses this address for a while after failed sign-ins (HTTP 503, overloaded). Try again later.",
    );
  });

  it("no answer: stays signed out, keeps nothing and says why", async () => {
    serveCatalogue();
    await boot();
    vi.stubGlobal("fetch", (_url: string, init?: RequestInit) =>
      init?.method === "OPTIONS" ? Promise.resolve(new Response(null, { status: 204 })) : Promise.reject(new TypeError("Failed to fetch")),
    );
    await signInWith("maybe-wrong");
    expect($("sign-in-error").textContent).toBe("The server cannot be reached.");
    expect($("workspace").hidden).toBe(true);
    expect(sessionStorage.getItem(TOKEN_KEY)).toBeNull();
  });

  it.each([
    ["the catalogue", 200, { agentTypes: [] }, "This environment has no agent types."],
    ["not-found, which only an authenticated request gets", 404, { code: "not-found" }, 'There is no application "demo"'],
    ["forbidden, which only an authenticated request gets", 403, { code: "forbidden" }, "Forbidden: this token may not read the catalogue"],
  ])("%s: signed in, the token kept for the tab", async (_what, status, body, shown) => {
    serveCatalogue();
    await boot();
    serveCatalogue(status, body);
    await signInWith("good");
    expect($("workspace").hidden).toBe(false);
    expect($("sign-in").hidden).toBe(true);
    expect($("catalogue-error").textContent).toContain(shown);
    expect(sessionStorage.getItem(TOKEN_KEY)).toBe("good");
  });

  it("a tab signed in before stays signed in when the server is busy at a reload, and keeps its run", async () => {
    await leftBehind("mine", 0);
    sessionStorage.setItem(TOKEN_KEY, "token");
    sessionStorage.setItem(RUN_KEY, "mine");
    serveCatalogue(503, { code: "overloaded" });
    await boot();
    expect($("workspace").hidden).toBe(false);
    expect($("catalogue-error").textContent).toContain("HTTP 503, overloaded");
    expect(sessionStorage.getItem(TOKEN_KEY)).toBe("token");
    expect(await runIds()).toEqual(["mine"]);
    // Signed out, the page discards the run it resumes: nothing of it goes on after the test (the
    // unit files share one IndexedDB, and a resume left running deleted another file's run later).
    $("sign-out").click();
    await until(document.body, () => !$("sign-in").hidden);
  });
});

// @vitest-environment node
// The handler reads files and resolves its root with Node's URL: no DOM here.
/**
 * The console's request handler with stand-ins for the request and response (no listener):
 * which requests it answers from a built page of its own, with which headers, and which it
 * leaves to the caller. (`handler.e2e.test.ts` serves the real build over HTTP.)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { consoleHandler } from "../src/node/handler.js";

let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "console-handler-"));
  writeFileSync(join(root, "index.html"), "<!doctype html><title>console</title>");
  mkdirSync(join(root, "assets"));
  writeFileSync(join(root, "assets", "index-1a2b.js"), "console.log(1)");
  writeFileSync(join(root, "assets", "data.bin"), Buffer.from([1, 2, 3]));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Answer {
  answered: boolean;
  status?: number;
  headers?: Record<string, string>;
  body?: Buffer | undefined;
}

async function ask(method: string, url: string | undefined): Promise<Answer> {
  const answer: Answer = { answered: false };
  const response = {
    writeHead(status: number, headers: Record<string, string>) {
      answer.status = status;
      answer.headers = headers;
      return response;
    },
    end(body?: Buffer) {
      answer.body = body;
      return response;
    },
  };
  answer.answered = await consoleHandler({ root })({ method, url } as IncomingMessage, response as unknown as ServerResponse);
  return answer;
}

it("serves the page at / and /index.html, not stored, with headers that keep it to itself", async () => {
  for (const url of ["/", "/index.html", "/?token=ignored"]) {
    const answer = await ask("GET", url);
    expect(answer.answered).toBe(true);
    expect(answer.status).toBe(200);
    expect(answer.body?.toString()).toBe("<!doctype html><title>console</title>");
    expect(answer.headers).toMatchObject({
      "content-type": "text/html; charset=utf-8",
      "content-length": "37",
      "cache-control": "no-store",
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
    });
    expect(answer.headers?.["content-security-policy"]).toContain("frame-ancestors 'none'");
  }
});

it("serves hashed assets cacheable for a year, by their type", async () => {
  const script = await ask("GET", "/assets/index-1a2b.js");
  expect(script.headers).toMatchObject({
    "content-type": "text/javascript; charset=utf-8",
    "cache-control": "public, max-age=31536000, immutable",
  });
  const data = await ask("GET", "/assets/data.bin");
  expect(data.headers?.["content-type"]).toBe("application/octet-stream");
  expect(data.body).toEqual(Buffer.from([1, 2, 3]));
});

it("HEAD has the headers and no body", async () => {
  const answer = await ask("HEAD", "/");
  expect(answer.answered).toBe(true);
  expect(answer.headers?.["content-length"]).toBe("37");
  expect(answer.body).toBeUndefined();
});

it("leaves other methods, unknown paths and paths that climb out to the caller", async () => {
  for (const [method, url] of [
    ["POST", "/"],
    ["GET", "/missing.js"],
    ["GET", "/assets/../../etc/passwd"],
    ["GET", "/assets/..%2f..%2fpackage.json"],
  ] as const) {
    const answer = await ask(method, url);
    expect(answer, `${method} ${url}`).toEqual({ answered: false });
  }
});

it("refuses to start without a built page, naming the fix", () => {
  expect(() => consoleHandler({ root: join(root, "assets") })).toThrow(/index\.html is missing\): the package is incomplete/);
  expect(() => consoleHandler({ root: join(root, "nowhere") })).toThrow(/is unreadable\): the package is incomplete/);
});

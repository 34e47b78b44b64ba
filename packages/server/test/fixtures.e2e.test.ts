/**
 * The shared golden vectors of fixtures/stream-session-v1, replayed against
 * the real server: every client-sent case of malformed.json is refused with
 * its expected code (after acceptance: a diagnostic naming the accepted
 * attempt, then close; as a first message: never accepted), and every
 * client-sent case of json-messages.json / binary-messages.json decodes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { decodeClientMessage } from "@golem-stream/wire";
import { RawClient, demoStart, startTestServer, v, type TestServer } from "./helpers.js";

const FIXTURES = fileURLToPath(new URL("../../../fixtures/stream-session-v1/", import.meta.url));

interface Part {
  readonly text?: string;
  readonly hex?: string;
  readonly repeat?: string;
  readonly repeatHex?: string;
  readonly numbered?: string;
  readonly count?: number;
  readonly start?: number;
  readonly separator?: string;
}

interface MalformedCase {
  readonly name: string;
  readonly description: string;
  readonly direction: "client" | "server";
  readonly binary: boolean;
  readonly expectedCode: string;
  readonly text?: string;
  readonly textHex?: string;
  readonly envelopeHex?: string;
  readonly generate?: { readonly kind: "concat"; readonly parts: readonly Part[] };
}

function load<T>(file: string): { cases: T[] } {
  return JSON.parse(readFileSync(`${FIXTURES}${file}`, "utf8")) as { cases: T[] };
}

/** The generator of malformed.json's description. */
function bytesOf(c: MalformedCase): Uint8Array {
  if (c.text !== undefined) return new TextEncoder().encode(c.text);
  if (c.textHex !== undefined) return Buffer.from(c.textHex, "hex");
  if (c.envelopeHex !== undefined) return Buffer.from(c.envelopeHex, "hex");
  const parts = (c.generate?.parts ?? []).map((part): Buffer => {
    if (part.text !== undefined) return Buffer.from(part.text, "utf8");
    if (part.hex !== undefined) return Buffer.from(part.hex, "hex");
    if (part.repeat !== undefined) return Buffer.from(part.repeat.repeat(part.count ?? 0), "utf8");
    if (part.repeatHex !== undefined) return Buffer.from(part.repeatHex.repeat(part.count ?? 0), "hex");
    if (part.numbered !== undefined) {
      const items = Array.from({ length: part.count ?? 0 }, (_, i) => part.numbered!.replaceAll("{n}", String((part.start ?? 0) + i)));
      return Buffer.from(items.join(part.separator ?? ""), "utf8");
    }
    throw new Error(`unknown generator part in ${c.name}`);
  });
  return Buffer.concat(parts);
}

const malformed = load<MalformedCase>("malformed.json").cases.filter((c) => c.direction === "client");

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.dispose();
});

describe("malformed.json (client-sent cases)", () => {
  it("has cases to replay", () => {
    expect(malformed.length).toBeGreaterThan(100);
  });

  it("after acceptance: invocationRejected with the expected code and the accepted attempt, then close", async () => {
    for (const c of malformed) {
      const client = await RawClient.connect(server.url);
      const start = demoStart("reverse", v.record(v.stream(randomUUID())));
      client.send(start);
      await client.nextOf("invocationAccepted");
      const bytes = bytesOf(c);
      client.sendRaw(c.binary ? bytes : Buffer.from(bytes), c.binary);
      const { messages, closed } = await client.all();
      const rejected = messages.find((m) => m.type === "invocationRejected");
      if (rejected === undefined) {
        // Oversized messages close with 1009 before anything is decoded.
        expect({ name: c.name, code: closed.code }).toEqual({ name: c.name, code: 1009 });
        expect(c.expectedCode).toBe("limit-exceeded");
        continue;
      }
      expect({ name: c.name, code: rejected.type === "invocationRejected" ? rejected.code : "" }).toEqual({
        name: c.name,
        code: c.expectedCode,
      });
      expect(rejected).toMatchObject({ attemptId: start.attemptId });
      expect(closed.code).toBe(c.expectedCode === "limit-exceeded" ? 1009 : 1002);
    }
  });

  it("as a first message: never accepted; closed with 1002 or 1009", async () => {
    for (const c of malformed) {
      const client = await RawClient.connect(server.url);
      const bytes = bytesOf(c);
      client.sendRaw(c.binary ? bytes : Buffer.from(bytes), c.binary);
      const { messages, closed } = await client.all();
      expect(messages.filter((m) => m.type !== "invocationRejected")).toEqual([]);
      for (const m of messages)
        expect({ name: c.name, code: m.type === "invocationRejected" ? m.code : "" }).toEqual({ name: c.name, code: c.expectedCode });
      expect([1002, 1009]).toContain(closed.code);
    }
  });
});

describe("valid vectors", () => {
  it("every client-sent message of json-messages.json and binary-messages.json decodes", () => {
    const text = load<{ name: string; direction: string; text: string }>("json-messages.json").cases.filter(
      (c) => c.direction === "client",
    );
    const binary = load<{ name: string; direction: string; envelopeHex: string }>("binary-messages.json").cases.filter(
      (c) => c.direction === "client",
    );
    expect(text.length + binary.length).toBeGreaterThan(5);
    for (const c of text) expect(() => decodeClientMessage(c.text, false)).not.toThrow();
    for (const c of binary) expect(() => decodeClientMessage(Buffer.from(c.envelopeHex, "hex"), true)).not.toThrow();
  });
});

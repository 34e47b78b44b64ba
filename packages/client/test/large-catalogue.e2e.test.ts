/**
 * A catalogue larger than the client reads by default, from the real server on loopback: 40 000
 * agent types (about 9 MiB of JSON; the server serves a catalogue of any size). The default bound
 * (8 MiB) refuses it with `limit-exceeded`, naming `maxCatalogueBytes`; a client given a larger
 * bound discovers it and calls an agent type of it.
 */
import { defineCatalogue, implement } from "@golem-stream/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, defineAgentType, t } from "../src/index.js";
import { startServer, TOKEN } from "./support/embedded.js";

const TYPES = 40_000;
const counter = (name: string) =>
  defineAgentType({ name, constructor: t.record({}), methods: { next: { params: t.record({}), result: t.u32() } } });
const last = counter(`counter-${TYPES - 1}`);
const where = { application: "app", environment: "prod" } as const;

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  const types = Array.from({ length: TYPES }, (_, i) => implement(counter(`counter-${i}`), { next: () => i }));
  server = await startServer({ agents: defineCatalogue({ applications: { app: { prod: types } } }) });
}, 60_000);
afterAll(async () => server.dispose());

describe("a catalogue past the client's maxCatalogueBytes", () => {
  it("the server's 40 000 agent types are more than the default 8 MiB: limit-exceeded names the option to raise", async () => {
    const response = await fetch(`${server.httpUrl}/v1/agents/types?application=app&environment=prod`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const size = (await response.arrayBuffer()).byteLength;
    expect(size).toBeGreaterThan(8 * 1024 * 1024);

    const client = createClient({ url: server.url, token: TOKEN });
    const refused = client.connect(last, { ...where, constructor: {} });
    await expect(refused).rejects.toMatchObject({ kind: "server-violation", code: "limit-exceeded" });
    await expect(refused).rejects.toThrow(
      `the agent catalogue of application "app", environment "prod" is larger than this client reads ` +
        `(maxCatalogueBytes, 8 MiB; the server declares ${size} bytes): give createClient a larger maxCatalogueBytes (at most 256 MiB)`,
    );
    await expect(client.agent({ ...where, agentType: "counter-0", constructorArgs: {} })).rejects.toMatchObject({
      code: "limit-exceeded",
    });
  }, 60_000);

  it("a client given a larger maxCatalogueBytes discovers it and calls its last agent type", async () => {
    const client = createClient({ url: server.url, token: TOKEN, maxCatalogueBytes: 16 * 1024 * 1024 });
    const agent = await client.connect(last, { ...where, constructor: {} });
    expect(await agent.next({})).toBe(TYPES - 1);
  }, 60_000);

  it("a bound below the catalogue's size names itself in bytes when it is no whole number of MiB", async () => {
    const client = createClient({ url: server.url, token: TOKEN, maxCatalogueBytes: 1000 });
    await expect(client.agent({ ...where, agentType: "counter-0", constructorArgs: {} })).rejects.toThrow(
      "(maxCatalogueBytes, 1000 bytes; the server declares ",
    );
  }, 60_000);
});

describe("maxCatalogueBytes is checked where it is given", () => {
  it.each([0, -1, 1.5, Number.NaN, 256 * 1024 * 1024 + 1, "8"])("refuses %s", (value) => {
    expect(() => createClient({ url: "http://127.0.0.1:1", token: TOKEN, maxCatalogueBytes: value as number })).toThrow(
      expect.objectContaining({ kind: "invalid-argument", message: "maxCatalogueBytes must be an integer from 1 through 268435456" }),
    );
  });

  it("takes 1 through 256 MiB", () => {
    for (const value of [1, 256 * 1024 * 1024])
      expect(() => createClient({ url: "http://127.0.0.1:1", token: TOKEN, maxCatalogueBytes: value })).not.toThrow();
  });
});

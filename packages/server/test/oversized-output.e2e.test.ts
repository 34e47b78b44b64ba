/**
 * An output value within the 8 MiB byte charge whose
 * message (cursor token, channel, sequence, mappings) is over the 8 MiB
 * text limit. It must end its stream with `producer-error` before anything
 * is committed, never wedge the session; and a log written before the check
 * that holds such an item reads as that terminal (see the legacy test).
 */
import { afterEach, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Keyring } from "@golem-stream/tokens";
import {
  canonicalJson,
  encodeServerMessage,
  LIMITS,
  ProtocolError,
  type JsonObject,
  type JsonValue,
  type ServerMessage,
} from "@golem-stream/wire";
import { createSessionServer, MemorySessionStore, StaticAgentHost, type AgentTypeDefinition } from "../src/index.js";
import { outputItemFits } from "../src/invocation/message-room.js";
import { RawClient, TOKEN, demoStart, emptyStart, startTestServer, v, type TestServer, resumeAttach } from "./helpers.js";
import { PROBE } from "./probe-server.js";

/**
 * The encoded length of `message`, or undefined when the encoder refuses it
 * as too large (`limit-exceeded`). Any other error fails the test: a
 * TypeError is a broken message, not one that does not fit.
 */
function encodedLength(message: ServerMessage): number | undefined {
  try {
    return encodeServerMessage(message).length;
  } catch (error) {
    if (error instanceof ProtocolError && error.code === "limit-exceeded") return undefined;
    throw error;
  }
}

const MiB = 1024 * 1024;
const PRODUCER_ERROR = { kind: "error", code: "producer-error", message: "an output item does not fit in one 8 MiB message" };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

type Accepted = Extract<ServerMessage, { type: "invocationAccepted" }>;

/** Every message of a connection that must end with invocationFinished and close 1000. */
async function finishedLog(client: RawClient): Promise<ServerMessage[]> {
  const { messages, closed } = await client.all();
  expect(messages.map((m) => m.type)).not.toContain("invocationRejected");
  expect(messages.at(-1)).toMatchObject({ type: "invocationFinished", outcome: { kind: "success" } });
  expect(closed.code).toBe(1000);
  return messages;
}

describe("an output item whose message cannot fit 8 MiB", () => {
  it("reverse of one string item of 8 MiB − 200 bytes: the item is accepted, its output stream ends producer-error, the invocation finishes; resume and takeover replay the same", async () => {
    server = await startTestServer();
    const client = await RawClient.connect(server.url);
    client.send(demoStart("reverse", v.record(v.stream(randomUUID()))));
    const accepted = (await client.nextOf("invocationAccepted")) as Accepted;
    const channel = accepted.mappings[0]!.channel;
    client.send({ type: "inputStreamItem", channel, sequence: 0n, value: v.str("x".repeat(8 * MiB - 200)) });
    client.send({ type: "inputStreamEnd", channel, sequence: 1n });
    const messages = await finishedLog(client);
    expect(messages).toContainEqual(
      expect.objectContaining({ type: "inputStreamAck", channel, highestContiguousSequence: 1n, terminal: true }),
    );
    const result = messages.find((m) => m.type === "invocationResult")!;
    const output = (result as Extract<ServerMessage, { type: "invocationResult" }>).mappings[0]!.channel;
    expect(messages.filter((m) => m.type === "outputStreamItem")).toEqual([]);
    const end = messages.find((m) => m.type === "outputStreamEnd" && m.channel === output) as Extract<
      ServerMessage,
      { type: "outputStreamEnd" }
    >;
    expect(end).toMatchObject({ sequence: 0n, outcome: PRODUCER_ERROR });

    // Any later attachment sees the same terminal and the finish.
    const again = await RawClient.connect(server.url);
    again.send(resumeAttach("takeover", accepted.sessionToken));
    const replayed = await finishedLog(again);
    expect(replayed.find((m) => m.type === "outputStreamEnd")).toMatchObject({ sequence: 0n, outcome: PRODUCER_ERROR });
    // From the terminal's cursor: nothing of that stream again.
    const fromEnd = await RawClient.connect(server.url);
    fromEnd.send(resumeAttach("takeover", accepted.sessionToken, [end.cursorToken!]));
    const rest = await finishedLog(fromEnd);
    expect(rest.filter((m) => m.type === "outputStreamEnd")).toEqual([]);
  });

  it("split fed one line of 8 MiB − 200 bytes: lines ends producer-error, upper carries every byte, the invocation finishes", async () => {
    server = await startTestServer();
    const client = await RawClient.connect(server.url);
    client.send(demoStart("split", v.record(v.stream(randomUUID()))));
    const accepted = (await client.nextOf("invocationAccepted")) as Accepted;
    const channel = accepted.mappings[0]!.channel;
    const size = 8 * MiB - 200;
    let sequence = 0n;
    for (let at = 0; at < size; at += MiB) {
      const payload = new Uint8Array(Math.min(MiB, size - at)).fill(0x61);
      client.send({ type: "input-u8", channel, sequence, payload });
      sequence += BigInt(payload.length);
    }
    client.send({ type: "inputStreamEnd", channel, sequence });
    const messages = await finishedLog(client);
    const result = messages.find((m) => m.type === "invocationResult") as Extract<ServerMessage, { type: "invocationResult" }>;
    const [upper, lines] = result.mappings.map((m) => m.channel);
    const upperBytes = messages.reduce((sum, m) => sum + (m.type === "output-u8" && m.channel === upper ? m.payload.length : 0), 0);
    expect(upperBytes).toBe(size);
    expect(messages.find((m) => m.type === "outputStreamEnd" && m.channel === upper)).toMatchObject({ outcome: { kind: "ok" } });
    expect(messages.find((m) => m.type === "outputStreamEnd" && m.channel === lines)).toMatchObject({
      sequence: 0n,
      outcome: PRODUCER_ERROR,
    });
  });
});

// ------------------------------------------------------------ property: sizes around the boundary

const string: JsonObject = { kind: "string", value: {} };
const element: JsonObject = {
  kind: "variant",
  value: {
    cases: [
      { name: "string", payload: string },
      { name: "text", payload: { kind: "text", value: { restrictions: {} } } },
      { name: "binary", payload: { kind: "binary", value: { restrictions: {} } } },
      { name: "bytes", payload: { kind: "list", value: { element: { kind: "u8", value: {} } } } },
      { name: "strings", payload: { kind: "list", value: { element: string } } },
    ],
  },
};
const KINDS = ["string", "text", "binary", "bytes", "strings"] as const;
type Kind = (typeof KINDS)[number];

/** A variant value of `kind` whose canonical JSON is about `bytes` long (within a few bytes). */
function valueOfSize(kind: Kind, bytes: number): JsonValue {
  const wrap = (index: number, payload: JsonValue): JsonValue => ({ kind: "variant", value: { case: index, payload } });
  const shell = (index: number, payload: JsonValue): number => canonicalJson(wrap(index, payload)).length;
  switch (kind) {
    case "string":
      return wrap(0, { kind: "string", value: "s".repeat(Math.max(0, bytes - shell(0, { kind: "string", value: "" }))) });
    case "text":
      return wrap(1, { kind: "text", value: { text: "t".repeat(Math.max(0, bytes - shell(1, { kind: "text", value: { text: "" } }))) } });
    case "binary": {
      const n = Math.max(1, Math.floor((bytes - shell(2, { kind: "binary", value: { bytes: [] } })) / 2));
      return wrap(2, { kind: "binary", value: { bytes: new Array<number>(n).fill(7) } });
    }
    case "bytes": {
      const one = canonicalJson({ kind: "u8", value: 7 }).length + 1;
      const n = Math.max(1, Math.floor((bytes - shell(3, { kind: "list", value: { elements: [] } })) / one));
      return wrap(3, { kind: "list", value: { elements: new Array<JsonValue>(n).fill({ kind: "u8", value: 7 }) } });
    }
    case "strings": {
      const piece = "p".repeat(4000);
      const one = canonicalJson({ kind: "string", value: piece }).length + 1;
      const n = Math.max(1, Math.floor((bytes - shell(4, { kind: "list", value: { elements: [] } })) / one));
      return wrap(4, { kind: "list", value: { elements: new Array<JsonValue>(n).fill({ kind: "string", value: piece }) } });
    }
  }
}

/** The largest value, in canonical bytes, that the server lets through: found from the rule itself. */
function boundary(): number {
  let low = 0;
  let high = LIMITS.maxTextMessageBytes;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (outputItemFits(mid, [])) low = mid;
    else high = mid - 1;
  }
  return low;
}

describe("property: output values of every kind around the 8 MiB message boundary", () => {
  it("whatever fits is delivered in a message the strict decoder accepts; whatever does not ends its stream producer-error; the invocation always finishes", async () => {
    const limit = boundary();
    // The rule reserves the widest envelope: channel, sequence, and a cursor token of 8192 bytes.
    expect(limit).toBeGreaterThan(LIMITS.maxTextMessageBytes - 8192 - 200);
    expect(limit).toBeLessThan(LIMITS.maxTextMessageBytes - 8192);

    let nextValue: JsonValue = null;
    const emitter: AgentTypeDefinition = {
      name: "emitter",
      constructorParameters: { root: { kind: "record", value: { fields: [] } } },
      config: [],
      methods: [
        {
          name: "emit",
          parameters: { root: { kind: "record", value: { fields: [] } } },
          result: { root: { kind: "stream", value: { inner: element } } },
        },
      ],
      implementations: {
        emit: async (ctx) => {
          const value = nextValue;
          return ctx.output(
            (async function* () {
              yield value as never;
            })(),
          );
        },
      },
    };
    const sessions = createSessionServer({
      store: new MemorySessionStore(),
      host: new StaticAgentHost({ test: { default: [emitter] } }),
      keyring: Keyring.generate("k1"),
      authenticator: (token) => (token === TOKEN ? { account: "acme", principal: "alice" } : undefined),
    });
    const { url } = await sessions.listen();
    try {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...KINDS), fc.integer({ min: -300, max: 300 }), async (kind, offset) => {
          nextValue = valueOfSize(kind, limit + offset);
          const size = canonicalJson(nextValue).length;
          const client = await RawClient.connect(url);
          client.send(emptyStart("emitter", "emit"));
          const messages = await finishedLog(client);
          const items = messages.filter((m) => m.type === "outputStreamItem");
          const end = messages.find((m) => m.type === "outputStreamEnd") as Extract<ServerMessage, { type: "outputStreamEnd" }>;
          if (size <= limit) {
            expect(items).toHaveLength(1);
            // What was sent went through the strict encoder, and is within the limit.
            expect(encodeServerMessage(items[0]!).length).toBeLessThanOrEqual(LIMITS.maxTextMessageBytes);
            expect(end).toMatchObject({ sequence: 1n, outcome: { kind: "ok" } });
          } else {
            expect(items).toEqual([]);
            expect(end).toMatchObject({ sequence: 0n, outcome: PRODUCER_ERROR });
          }
        }),
        { numRuns: 8 },
      );
    } finally {
      await sessions.close();
    }
  }, 120_000);

  it("the rule is sound: a value it lets through fits its message with the widest envelope and any mappings it counted", () => {
    fc.assert(
      fc.property(fc.integer({ min: -400, max: 400 }), fc.integer({ min: 0, max: 3 }), (offset, streams) => {
        const tokens = Array.from({ length: streams }, (_, i) => `gai1_${String(i).repeat(300)}`);
        const bytes = LIMITS.maxTextMessageBytes - 8192 - 120 - streams * 350 + offset;
        const message = {
          type: "outputStreamItem" as const,
          channel: 4294967295,
          cursorToken: `gai1_${"A".repeat(8192 - 5)}`,
          mappings: tokens.map((streamToken, i) => ({ channel: 4294967295 - i, direction: "output" as const, streamToken })),
          sequence: 18446744073709551614n, // the widest an item can have (room for itself)
          value: { kind: "string", value: "v".repeat(bytes - canonicalJson({ kind: "string", value: "" }).length) },
        };
        const fits = outputItemFits(bytes, tokens);
        const encoded = encodedLength(message as ServerMessage);
        if (fits) expect(encoded).toBeDefined();
        // Tight: at the widest envelope, what the rule refuses does not encode either.
        if (!fits) expect(encoded).toBeUndefined();
      }),
      { numRuns: 60 },
    );
  });

  it("the rule is exact at its boundary, with no mapping and with several: the largest value it lets through encodes, one byte more does not", () => {
    for (const streams of [0, 1, 2, 3]) {
      const tokens = Array.from({ length: streams }, (_, i) => `gai1_${String(i).repeat(300)}`);
      const encodes = (bytes: number): boolean => {
        const message = {
          type: "outputStreamItem" as const,
          channel: 4294967295,
          cursorToken: `gai1_${"A".repeat(8192 - 5)}`,
          mappings: tokens.map((streamToken, i) => ({ channel: 4294967295 - i, direction: "output" as const, streamToken })),
          sequence: 18446744073709551614n,
          value: { kind: "string", value: "v".repeat(bytes - canonicalJson({ kind: "string", value: "" }).length) },
        };
        return encodedLength(message as ServerMessage) !== undefined;
      };
      // The largest value the rule lets through, found by bisection.
      let low = 0;
      let high = LIMITS.maxTextMessageBytes;
      while (low + 1 < high) {
        const middle = Math.floor((low + high) / 2);
        if (outputItemFits(middle, tokens)) low = middle;
        else high = middle;
      }
      expect(encodes(low), `${streams} mappings, ${low} bytes`).toBe(true);
      expect(encodes(low + 1), `${streams} mappings, ${low + 1} bytes`).toBe(false);
    }
  });
});

describe("acceptances that list every stream of a session", () => {
  it("with kilobyte principals, a session stops taking new streams before its acceptance would pass 8 MiB, and every resume still fits", async () => {
    const principal = "p".repeat(4239); // stream tokens of about 6.1 KB
    const sessions = createSessionServer({
      store: new MemorySessionStore(),
      host: new StaticAgentHost({ test: { default: [PROBE] } }),
      keyring: Keyring.generate("k1"),
      authenticator: (token) => (token === TOKEN ? { account: "acme", principal } : undefined),
      limits: { maxCallerIdentityBytes: 4243 }, // the ceiling: the default (2048) refuses this identity
    });
    const { url } = await sessions.listen();
    try {
      const client = await RawClient.connect(url);
      const start = demoStart("nested", v.record(v.stream(randomUUID())), {
        selector: {
          agentType: "probe",
          application: "test",
          constructorParameters: v.record(v.str("t")),
          environment: "default",
          method: "nested",
        },
      });
      client.send(start);
      const accepted = (await client.nextOf("invocationAccepted")) as Accepted;
      const channel = accepted.mappings[0]!.channel;
      // More nested streams than 8 MiB of mappings can list at this token size (4096 would be 26 MiB).
      // Each inner stream is ended once its ACK announces it, so the agent reads on.
      let acked = 0;
      let rejected: ServerMessage | undefined;
      for (let i = 0; i < 1400 && rejected === undefined; i++) {
        client.send({ type: "inputStreamItem", channel, sequence: BigInt(i), value: v.record(v.str(`n${i}`), v.stream(randomUUID())) });
        for (;;) {
          const message = await client.next();
          if (message.type === "invocationRejected") {
            rejected = message;
            break;
          }
          if (message.type === "inputStreamAck" && message.channel === channel) {
            acked = Number(message.highestContiguousSequence);
            for (const mapping of message.mappings) client.send({ type: "inputStreamEnd", channel: mapping.channel, sequence: 0n });
            break;
          }
        }
      }
      expect(rejected).toMatchObject({ code: "limit-exceeded" });
      expect((await client.closed).code).toBe(1002);
      expect(acked).toBeGreaterThan(900);
      expect(acked).toBeLessThan(1400);

      // A resume lists every stream: the acceptance is sent, and it decodes (RawClient decodes strictly).
      const again = await RawClient.connect(url);
      again.send(resumeAttach("takeover", accepted.sessionToken));
      const reaccepted = (await again.nextOf("invocationAccepted")) as Accepted;
      expect(reaccepted.mappings.length).toBe(acked + 1);
      expect(encodeServerMessage(reaccepted).length).toBeLessThanOrEqual(LIMITS.maxTextMessageBytes);
      again.close();
    } finally {
      await sessions.close();
    }
  }, 60_000);
});

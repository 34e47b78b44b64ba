/**
 * Every public entry point fed the same table of wrong-typed values (the
 * noble-hashes habit): each must refuse with a `ClientError` of kind
 * `invalid-argument` — never a stray TypeError, never a connection attempt.
 */
import { echoContract } from "@golem-stream/contract/demo";
import { describe, expect, it, vi } from "vitest";
import { createClient, inputStream, webSocketTransport, wsTransport, type ResumeState } from "../src/index.js";
import {
  SESSION,
  STREAM_OUT,
  echo,
  acceptanceOf,
  inputMapping,
  isStart,
  memoryClient,
  outputMapping,
  provisionalRefOf,
  streamResult,
} from "./support/fixtures.js";

const WRONG: [string, unknown][] = [
  ["undefined", undefined],
  ["null", null],
  ["zero", 0],
  ["NaN", Number.NaN],
  ["a string", "x"],
  ["true", true],
  ["an array", [1]],
  ["an empty object", {}],
  ["a function", () => 1],
  ["a symbol", Symbol("s")],
  ["a bigint", 1n],
];

const refused = expect.objectContaining({ name: "ClientError", kind: "invalid-argument" });

const validState: ResumeState = {
  sessionToken: "gai1_token",
  outputCursors: [],
  selector: { ...echo, method: "count" },
  idempotencyKey: "k",
};

describe("a token that is no bearer token", () => {
  it("createClient refuses a line read from a file, and a token with a space or a character past ~, saying why", () => {
    const refusal = (message: string) => expect.objectContaining({ kind: "invalid-argument", message });
    expect(() => createClient({ url: "ws://h", token: "gai1_token\n" })).toThrow(
      refusal("token must be visible ASCII with no space or line end around it: trim it (a token read from a file keeps its newline)"),
    );
    for (const token of ["two words", "caf\u00e9", "tab\tinside"])
      expect(() => createClient({ url: "ws://h", token }), token).toThrow(
        refusal("token must be visible ASCII only (no spaces, line ends or other characters outside ! to ~)"),
      );
    expect(() => createClient({ url: "ws://h", token: "!~" })).not.toThrow();
  });
});

describe("agent's names", () => {
  it("refuses an empty application, environment or agentType before any request", async () => {
    const { client } = memoryClient();
    const fetched = vi.spyOn(globalThis, "fetch");
    try {
      const where = { application: "a", environment: "e", agentType: "echo", constructorArgs: {} };
      for (const field of ["application", "environment", "agentType"])
        await expect(client.agent({ ...where, [field]: "" }), field).rejects.toEqual(
          expect.objectContaining({ kind: "invalid-argument", message: `${field} must be a non-empty string` }),
        );
      expect(fetched).not.toHaveBeenCalled();
    } finally {
      fetched.mockRestore();
    }
  });
});

describe.each(WRONG)("given %s", (_label, wrong) => {
  it("createClient refuses it as options, url, token, getToken and transport", () => {
    expect(() => createClient(wrong as never)).toThrow(refused);
    if (typeof wrong !== "string") expect(() => createClient({ url: wrong as never, token: "t" })).toThrow(refused);
    if (typeof wrong !== "string") expect(() => createClient({ url: "ws://h", token: wrong as never })).toThrow(refused);
    if (wrong !== undefined && typeof wrong !== "function")
      expect(() => createClient({ url: "ws://h", getToken: wrong as never })).toThrow(refused);
    if (wrong !== undefined) expect(() => createClient({ url: "ws://h", token: "t", transport: wrong as never })).toThrow(refused);
  });

  // Arrays and objects are sources of some kinds: their own test is below.
  if (typeof wrong !== "object" || wrong === null) {
    it("inputStream.* refuse it as a source", () => {
      for (const make of [inputStream.bytes, inputStream.binary, inputStream.strings, inputStream.values]) {
        expect(() => (make as (source: unknown) => unknown)(wrong)).toThrow(refused);
      }
    });
  }

  it("invoke refuses it as options, selector fields, parameters and signal", () => {
    const { client, transport } = memoryClient();
    const base = { ...echo, method: "m", methodParameters: { kind: "bool", value: true } };
    expect(() => client.invoke(wrong as never)).toThrow(refused);
    for (const field of ["application", "environment", "agentType", "method", "constructorParameters", "methodParameters"]) {
      if (typeof wrong === "string" && !field.endsWith("Parameters")) continue; // any string is a name; the server judges it
      if (field === "methodParameters" && typeof wrong === "object" && wrong !== null && !Array.isArray(wrong)) continue; // {} is walked, then refused by the encoder below
      expect(() => client.invoke({ ...base, [field]: wrong } as never), field).toThrow(refused);
    }
    if (wrong !== undefined) {
      expect(() => client.invoke({ ...base, signal: wrong } as never)).toThrow(refused);
      if (typeof wrong !== "function") expect(() => client.invoke({ ...base, onCheckpoint: wrong } as never)).toThrow(refused);
      if (typeof wrong !== "string") expect(() => client.invoke({ ...base, idempotencyKey: wrong } as never)).toThrow(refused);
    }
    expect(transport.connections).toHaveLength(0);
  });

  it("agent refuses it as options and as application, environment and agentType, before any request; connect as application and environment", async () => {
    const { client, transport } = memoryClient();
    const fetched = vi.spyOn(globalThis, "fetch");
    try {
      if (typeof wrong !== "object" || wrong === null) await expect(client.agent(wrong as never)).rejects.toEqual(refused);
      if (typeof wrong !== "string") {
        const where = { application: "a", environment: "e", agentType: "echo", constructorArgs: {} };
        for (const field of ["application", "environment", "agentType"])
          await expect(client.agent({ ...where, [field]: wrong } as never), field).rejects.toEqual(refused);
        for (const field of ["application", "environment"])
          await expect(
            client.connect(echoContract, { ...where, constructor: { name: "n" }, [field]: wrong } as never),
            field,
          ).rejects.toEqual(refused);
      }
      expect(fetched).not.toHaveBeenCalled();
    } finally {
      fetched.mockRestore();
    }
    expect(transport.connections).toHaveLength(0);
  });

  // undefined is no signal.
  if (wrong !== undefined) {
    it("agent and connect refuse it as signal before any request", async () => {
      const { client } = memoryClient();
      const fetched = vi.spyOn(globalThis, "fetch");
      try {
        const where = { application: "a", environment: "e", signal: wrong as never };
        await expect(client.agent({ ...where, agentType: "echo", constructorArgs: {} })).rejects.toEqual(refused);
        await expect(client.connect(echoContract, { ...where, constructor: { name: "n" } })).rejects.toEqual(refused);
        expect(fetched).not.toHaveBeenCalled();
      } finally {
        fetched.mockRestore();
      }
    });
  }

  it("resume and takeover refuse it as state, as any state field and as options, signal and onCheckpoint", () => {
    const { client, transport } = memoryClient();
    for (const attach of [client.resume, client.takeover]) {
      expect(() => attach(wrong as never)).toThrow(refused);
      for (const field of ["sessionToken", "outputCursors", "selector", "idempotencyKey"] as const) {
        if (field === "selector" && typeof wrong === "object" && wrong !== null) continue; // any object passes the shape check; the server judges selectors
        if (typeof wrong === "string" && field !== "outputCursors" && field !== "selector") continue; // any string is an opaque token or a key
        expect(() => attach({ ...validState, [field]: wrong } as never), field).toThrow(refused);
      }
      if (wrong !== undefined) expect(() => attach({ ...validState, pendingOperation: wrong } as never)).toThrow(refused);
      if (wrong !== undefined && (typeof wrong !== "object" || wrong === null || Array.isArray(wrong)))
        expect(() => attach(validState, wrong as never), "options").toThrow(refused);
      if (wrong !== undefined) expect(() => attach(validState, { signal: wrong } as never), "signal").toThrow(refused);
      if (wrong !== undefined && typeof wrong !== "function")
        expect(() => attach(validState, { onCheckpoint: wrong } as never), "onCheckpoint").toThrow(refused);
    }
    expect(transport.connections).toHaveLength(0);
  });

  it("wsTransport refuses it as options and as each numeric option", () => {
    if (wrong !== undefined && !(typeof wrong === "object" && wrong !== null && !Array.isArray(wrong))) {
      expect(() => wsTransport(wrong as never)).toThrow(refused);
    }
    if (wrong === undefined) {
      // Every default.
      expect(() => wsTransport(wrong)).not.toThrow();
      expect(() => wsTransport(Object.fromEntries(NUMERIC_TRANSPORT_OPTIONS.map((option) => [option, wrong])))).not.toThrow();
      return;
    }
    for (const option of NUMERIC_TRANSPORT_OPTIONS) {
      if (wrong === 0 && ZERO_ALLOWED.has(option)) continue;
      expect(() => wsTransport({ [option]: wrong }), option).toThrow(refused);
    }
  });

  it("webSocketTransport refuses it as options, as open and as each numeric option", () => {
    if (wrong !== undefined && !(typeof wrong === "object" && wrong !== null && !Array.isArray(wrong))) {
      expect(() => webSocketTransport(wrong as never)).toThrow(refused);
    }
    if (wrong === undefined) {
      expect(() => webSocketTransport(wrong)).not.toThrow();
      expect(() =>
        webSocketTransport({ open: wrong, ...Object.fromEntries(NUMERIC_WEB_SOCKET_OPTIONS.map((option) => [option, wrong])) }),
      ).not.toThrow();
      return;
    }
    if (typeof wrong !== "function") expect(() => webSocketTransport({ open: wrong as never })).toThrow(refused);
    for (const option of NUMERIC_WEB_SOCKET_OPTIONS) expect(() => webSocketTransport({ [option]: wrong }), option).toThrow(refused);
  });

  it("resume and takeover refuse it in a pending start's state", () => {
    const { client, transport } = memoryClient();
    for (const attach of [client.resume, client.takeover]) {
      expect(() => attach({ ...pendingStart, pendingOperation: wrong } as never)).toThrow(refused);
      for (const field of ["attemptId", "config", "idempotencyKey", "methodParameters", "selector"] as const) {
        if (field === "idempotencyKey" && typeof wrong === "string") continue; // a key, then refused below as a mismatch
        expect(
          () => attach({ ...pendingStart, pendingOperation: { ...pendingStart.pendingOperation, [field]: wrong } } as never),
          field,
        ).toThrow(refused);
      }
    }
    expect(transport.connections).toHaveLength(0);
  });
});

const NUMERIC_TRANSPORT_OPTIONS = ["handshakeTimeoutMs", "maxPayloadBytes", "keepaliveIntervalMs", "maxPooledSendBytes"] as const;
/** 0 disables keepalives, and pools nothing. */
const ZERO_ALLOWED = new Set<string>(["keepaliveIntervalMs", "maxPooledSendBytes"]);
const NUMERIC_WEB_SOCKET_OPTIONS = ["maxHeldBytes", "maxPayloadBytes", "handshakeTimeoutMs"] as const;

describe("numbers out of an option's range", () => {
  // ws keeps maxPayload as a 32-bit integer and reads a negative or NaN one as no limit; Node fires
  // a timer of more than 2^31 - 1 ms at once.
  it.each([
    ["handshakeTimeoutMs", [-1, 0.5, 2 ** 31, Number.POSITIVE_INFINITY], [1, 2 ** 31 - 1]],
    ["maxPayloadBytes", [-1, 0, 1.5, 2 ** 31, 2 ** 32 + 100, Number.POSITIVE_INFINITY], [1, 2 ** 31 - 1]],
    ["keepaliveIntervalMs", [-1, 1.5, 2 ** 31], [0, 2 ** 31 - 1]],
    ["maxPooledSendBytes", [-1, 0.5, 2 ** 53], [0, 2 ** 53 - 1]],
  ] as const)("wsTransport refuses %s outside its range and takes its ends", (option, outside, ends) => {
    for (const value of outside) expect(() => wsTransport({ [option]: value }), String(value)).toThrow(refused);
    for (const value of ends) expect(() => wsTransport({ [option]: value }), String(value)).not.toThrow();
  });

  // No ws under it: a size may be any positive integer; a timer still fires at once past 2^31 - 1 ms.
  it.each([
    ["maxHeldBytes", [-1, 0, 1.5, 2 ** 53, Number.POSITIVE_INFINITY], [1, 2 ** 53 - 1]],
    ["maxPayloadBytes", [-1, 0, 1.5, 2 ** 53, Number.POSITIVE_INFINITY], [1, 2 ** 53 - 1]],
    ["handshakeTimeoutMs", [-1, 0, 0.5, 2 ** 31, Number.POSITIVE_INFINITY], [1, 2 ** 31 - 1]],
  ] as const)("webSocketTransport refuses %s outside its range and takes its ends", (option, outside, ends) => {
    const naming = expect.objectContaining({ kind: "invalid-argument", message: expect.stringContaining(option) });
    for (const value of outside) expect(() => webSocketTransport({ [option]: value }), String(value)).toThrow(naming);
    for (const value of ends) expect(() => webSocketTransport({ [option]: value }), String(value)).not.toThrow();
  });

  it.each([
    ["cancelConfirmTimeoutMs", [0, 2 ** 31], [1, 2 ** 31 - 1]],
    ["acceptanceTimeoutMs", [-1, 2 ** 31], [0, 2 ** 31 - 1]],
    ["maxUnackedInputBytes", [0, -1, 2 ** 53], [1, 2 ** 53 - 1]],
  ] as const)("createClient refuses %s outside its range and takes its ends", (option, outside, ends) => {
    const transport = memoryClient().transport;
    for (const value of outside)
      expect(() => createClient({ url: "ws://h", token: "t", transport, [option]: value }), String(value)).toThrow(refused);
    for (const value of ends)
      expect(() => createClient({ url: "ws://h", token: "t", transport, [option]: value }), String(value)).not.toThrow();
  });
});

const pendingStart: ResumeState = {
  outputCursors: [],
  selector: { ...echo, method: "count" },
  idempotencyKey: "k",
  pendingOperation: {
    type: "invocationStart",
    attemptId: "ca7e5a82-2064-4c18-8359-806145c1562f",
    config: [],
    idempotencyKey: "k",
    methodParameters: { kind: "record", value: { fields: [] } },
    selector: { ...echo, method: "count" },
  },
};

describe("a pending start's state must agree with itself", () => {
  it.each([
    ["a session token beside it", { sessionToken: "gai1_token" }],
    ["output cursors", { outputCursors: ["gai1_cursor"] }],
    ["another idempotency key", { idempotencyKey: "other" }],
    ["another selector", { selector: { ...echo, method: "reverse" } }],
  ])("refuses %s", (_label, change) => {
    const { client, transport } = memoryClient();
    expect(() => client.takeover({ ...pendingStart, ...change } as never)).toThrow(refused);
    expect(transport.connections).toHaveLength(0);
  });

  it("accepts the consistent state", () => {
    const { client } = memoryClient();
    expect(() => void client.takeover(pendingStart).cancel()).not.toThrow();
  });
});

it("an array or plain object is not a byte source either", () => {
  expect(() => inputStream.bytes({} as never)).toThrow(refused);
});

describe("cancel reasons the protocol does not have", () => {
  it("stream.cancel and inputStream.cancel refuse them before changing anything; the session carries on", async () => {
    const { client, transport } = memoryClient();
    const input = inputStream.strings(["a"]);
    const call = client.invoke({ ...echo, method: "reverse", methodParameters: { kind: "record", value: { fields: [input] } } });
    const server = await transport.nextConnection();
    const start = await server.waitUntil(isStart);
    server.send(acceptanceOf(start, [inputMapping(1, provisionalRefOf(start))]));
    server.send({ type: "invocationResult", mappings: [outputMapping(2)], result: streamResult(STREAM_OUT, "string") });
    const result = await call.result;
    const stream = result.kind === "value" ? result.streams[0]! : undefined;
    for (const wrong of [...WRONG.map(([, value]) => value), "bored", "transport-detached"]) {
      if (wrong === undefined) continue; // the default reason
      await expect(stream!.cancel(wrong as never)).rejects.toEqual(refused);
      expect(() => input.cancel(wrong as never)).toThrow(refused);
    }
    // Nothing was sent or half-done: the stream still delivers, and a valid cancel still works.
    server.send({
      type: "outputStreamItem",
      channel: 2,
      cursorToken: "c0",
      mappings: [],
      sequence: 0n,
      value: { kind: "string", value: "a" },
    });
    const iterator = stream![Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ kind: "string", value: "a" });
    expect(server.received.filter((m) => m.type === "streamCancel")).toEqual([]);
    await stream!.cancel("consumer-drop");
    expect(server.received.at(-1)).toEqual({ type: "streamCancel", channel: 2, reason: "consumer-drop" });
    call.cancel();
    await expect(call.finished).rejects.toMatchObject({ kind: "aborted" });
  });
});

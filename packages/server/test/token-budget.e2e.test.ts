/**
 * The issuer, the audience, the caller's identity and the selector's names
 * share what a session token leaves (src/admission/token-budget.ts). Checked
 * when the server is created and when a StaticAgentHost is built, so that a
 * server that starts can always mint: before, an over-long issuer or name
 * made every start fail `limit-exceeded` at runtime.
 */
import { afterEach, describe, expect, it } from "vitest";
import { t } from "@golem-stream/schema-value";
import { Keyring } from "@golem-stream/tokens";
import type { JsonObject } from "@golem-stream/wire";
import {
  DEFAULT_LIMITS,
  MAX_CALLER_IDENTITY_BYTES,
  MAX_SELECTOR_NAME_BYTES,
  MemorySessionStore,
  StaticAgentHost,
  createSessionServer,
  type AgentTypeDefinition,
  type Principal,
  type ServerLimits,
} from "../src/index.js";
import { RawClient, TOKEN, demoStart, v } from "./helpers.js";

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const EMPTY_RECORD: JsonObject = { kind: "record", value: { fields: [] } };
/** `bytes` UTF-8 bytes, two-byte characters first, so the check must count bytes, not characters. */
const name = (bytes: number, letter = "n"): string => "é".repeat(bytes >> 1) + letter.repeat(bytes & 1);
const LONGEST = {
  application: name(MAX_SELECTOR_NAME_BYTES, "a"),
  environment: name(MAX_SELECTOR_NAME_BYTES, "e"),
  agentType: name(MAX_SELECTOR_NAME_BYTES, "t"),
  method: name(MAX_SELECTOR_NAME_BYTES, "m"),
};

function agentType(typeName: string, methodName: string): AgentTypeDefinition {
  return {
    name: typeName,
    constructorParameters: { root: EMPTY_RECORD },
    config: [],
    methods: [{ name: methodName, parameters: { root: EMPTY_RECORD } }],
    implementations: { [methodName]: async () => undefined },
  };
}

function hostOf(names: typeof LONGEST): StaticAgentHost {
  return new StaticAgentHost({ [names.application]: { [names.environment]: [agentType(names.agentType, names.method)] } });
}

function server(options: { issuer?: string; audience?: string; caller?: Principal; limits?: Partial<ServerLimits> }) {
  const caller = options.caller ?? { account: "a", principal: "p" };
  const created = createSessionServer({
    store: new MemorySessionStore(),
    host: hostOf(LONGEST),
    keyring: Keyring.generate("k".repeat(64)),
    authenticator: (token) => (token === TOKEN ? caller : undefined),
    ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
    ...(options.audience === undefined ? {} : { audience: options.audience }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  servers.push(created);
  return created;
}

/** Starts the longest selector with a 1 KiB idempotency key; resolves with the session token once the invocation finished. */
async function longestStart(url: string): Promise<string> {
  const client = await RawClient.connect(url);
  client.send(
    demoStart(LONGEST.method, v.record(), {
      idempotencyKey: "k".repeat(1024),
      selector: { ...LONGEST, constructorParameters: v.record() },
    }),
  );
  const { messages } = await client.all();
  expect(messages.map((m) => m.type)).toEqual(["invocationAccepted", "invocationResult", "invocationFinished"]);
  return (messages[0] as { sessionToken: string }).sessionToken;
}

/** An identity of exactly `bytes` UTF-8 bytes. */
const identityOf = (bytes: number): Principal => ({ account: "acme", principal: name(bytes - 4) });

describe("options.issuer and options.audience", () => {
  const room = 4275 - DEFAULT_LIMITS.maxCallerIdentityBytes; // 2227: admission/token-budget.ts

  it("at the bound the session token of the longest start (identity at the limit, 128-byte names, 1 KiB key, 64-byte key id) is exactly 8192 characters", async () => {
    const issuer = name(room - 1000, "i");
    const sessions = server({ issuer, audience: "u".repeat(1000), caller: identityOf(DEFAULT_LIMITS.maxCallerIdentityBytes) });
    const { url } = await sessions.listen(0, "127.0.0.1");
    expect(await longestStart(url)).toHaveLength(8192);
  });

  it("one byte more is a RangeError when the server is created, saying what to change", () => {
    expect(() => server({ issuer: name(room - 1000 + 1, "i"), audience: "u".repeat(1000) })).toThrow(
      new RangeError(
        "options.issuer and options.audience are 2228 UTF-8 bytes together, over the 2227 a session token leaves them next to a caller identity of " +
          "limits.maxCallerIdentityBytes (2048) and selector names of up to 128 bytes each (8192 characters in all): shorten them or lower limits.maxCallerIdentityBytes",
      ),
    );
  });

  it("a lower identity limit leaves them more", () => {
    expect(() => server({ issuer: "i".repeat(4000), limits: { maxCallerIdentityBytes: 200 } })).not.toThrow();
    expect(() => server({ issuer: "i".repeat(4000), limits: { maxCallerIdentityBytes: 256 } })).toThrow(RangeError);
  });

  it("text with a lone surrogate is a TypeError (tokens carry UTF-8)", () => {
    expect(() => server({ audience: "aud\ud800" })).toThrow(
      new TypeError("options.audience must be well-formed Unicode text (no lone surrogates): tokens carry it as UTF-8"),
    );
  });
});

describe("limits.maxCallerIdentityBytes at its ceiling", () => {
  it("is 4243, and with the default issuer and audience the longest start still mints a token of 8192 characters", async () => {
    expect(MAX_CALLER_IDENTITY_BYTES).toBe(4243);
    const sessions = server({ caller: identityOf(MAX_CALLER_IDENTITY_BYTES), limits: { maxCallerIdentityBytes: 100_000 } });
    const { url } = await sessions.listen(0, "127.0.0.1");
    expect(await longestStart(url)).toHaveLength(8192);
  });

  it("leaves nothing for an issuer longer than the default", () => {
    expect(() => server({ issuer: "golem-stream!", limits: { maxCallerIdentityBytes: 100_000 } })).toThrow(
      /^options\.issuer and options\.audience are 33 UTF-8 bytes together, over the 32 /,
    );
  });
});

describe("StaticAgentHost names", () => {
  it("of 128 UTF-8 bytes are registered", () => {
    expect(
      hostOf(LONGEST)
        .agentTypes(LONGEST.application, LONGEST.environment)
        ?.map((type) => type.name),
    ).toEqual([LONGEST.agentType]);
  });

  /** How the message shows a name: JSON-quoted, the first 40 characters. */
  const shown = (text: string): string => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
  const tooLong = name(MAX_SELECTOR_NAME_BYTES + 1, "x");
  const app = `application ${shown(LONGEST.application)}: `;
  const env = `${app}environment ${shown(LONGEST.environment)}: `;
  const type = `${env}agent type ${shown(LONGEST.agentType)}: `;

  it.each([
    ["application", ""],
    ["environment", app],
    ["agentType", env],
    ["method", type],
  ] as const)("one byte longer: a %s name is refused with a RangeError that says where", (part, where) => {
    const what = part === "agentType" ? "agent type" : part;
    expect(() => hostOf({ ...LONGEST, [part]: tooLong })).toThrow(
      new RangeError(
        `StaticAgentHost: ${where}${what} name ${shown(tooLong)} is 129 UTF-8 bytes long, over the 128 a selector name may have (it is written into every session token)`,
      ),
    );
  });

  it("a constructor that holds a stream is a TypeError naming the agent type (protocol 3.1: it could never be invoked)", () => {
    const streaming: AgentTypeDefinition = {
      ...agentType("streams", "m"),
      constructorParameters: t.graph(t.record({ s: t.stream(t.u8()) })),
    };
    expect(() => new StaticAgentHost({ app: { env: [streaming] } })).toThrow(
      /agent type "streams": constructor parameters: .*stream types are not allowed/,
    );
  });

  it("an empty name or one with a lone surrogate is a TypeError", () => {
    expect(() => hostOf({ ...LONGEST, method: "" })).toThrow(
      new TypeError(`StaticAgentHost: ${type}method name must be a non-empty string`),
    );
    expect(() => hostOf({ ...LONGEST, environment: "env\udc00" })).toThrow(
      new TypeError(`StaticAgentHost: ${app}environment name ${shown("env\udc00")} must be well-formed Unicode text (no lone surrogates)`),
    );
  });
});

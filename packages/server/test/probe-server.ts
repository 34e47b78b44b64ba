/**
 * A server with a small test-only catalogue (application `test`) next to the
 * demo: what the demo cannot reach (two streams in one start, a throwing
 * method, a forbidden method, configuration, a host fault).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keyring } from "@golem-stream/tokens";
import type { JsonObject, SchemaGraphJson } from "@golem-stream/wire";
import {
  SqliteSessionStore,
  createSessionServer,
  type AgentHost,
  type AgentTypeDefinition,
  type AgentTypeDescriptor,
  type InvocationContext,
  type ServerLimits,
  StaticAgentHost,
} from "../src/index.js";
import { ECHO_CONSTRUCTOR, createDemoHost } from "../src/demo/index.js";
import { TOKEN } from "./helpers.js";
import type { PartialObserver } from "../src/index.js";

const string: JsonObject = { kind: "string", value: {} };
const stream = (inner: JsonObject): JsonObject => ({ kind: "stream", value: { inner } });
const graph = (root: JsonObject): SchemaGraphJson => ({ root });
const record = (...fields: [string, JsonObject][]): JsonObject => ({
  kind: "record",
  value: { fields: fields.map(([name, body]) => ({ name, body })) },
});

function streamField(ctx: InvocationContext, index: number) {
  const fields = (ctx.parameters.value as { fields: JsonObject[] }).fields;
  return fields[index];
}

/** `gate` reads nothing until the test opens the gate, then drains its input. */
let openGate: () => void = () => undefined;
let gate = new Promise<void>((resolve) => (openGate = resolve));
export function resetGate(): () => void {
  gate = new Promise<void>((resolve) => (openGate = resolve));
  return () => openGate();
}

export const PROBE: AgentTypeDefinition = {
  name: "probe",
  constructorParameters: ECHO_CONSTRUCTOR,
  config: [{ path: ["mode"], accepts: (value) => value === "fast" || value === "slow" }],
  methods: [
    { name: "two", parameters: graph(record(["a", stream(string)], ["b", stream(string)])) },
    { name: "boom", parameters: graph(record()) },
    { name: "forbidden", parameters: graph(record()) },
    { name: "ignore", parameters: graph(record(["a", stream(string)])) },
    { name: "gate", parameters: graph(record(["a", stream(string)])) },
    { name: "explode", parameters: graph(record(["a", stream(string)])) },
    { name: "drop", parameters: graph(record(["a", stream(string)], ["b", stream(string)])) },
    {
      name: "nested",
      parameters: graph(record(["outer", stream(record(["name", string], ["inner", stream(string)]))])),
      result: graph(stream(string)),
    },
  ],
  implementations: {
    two: async (ctx) => {
      for await (const _ of ctx.inputValues(streamField(ctx, 0)));
      for await (const _ of ctx.inputValues(streamField(ctx, 1)));
      return undefined;
    },
    boom: async () => {
      throw new Error("secret internal detail at /srv/app.ts:42");
    },
    forbidden: async () => undefined,
    // Returns at once without reading its input: the server cancels it with consumer-drop.
    ignore: async () => undefined,
    // Reads one item, then fails the whole invocation while its input is still open.
    explode: async (ctx) => {
      for await (const _ of ctx.inputValues(streamField(ctx, 0))) throw new Error("exploded");
      return undefined;
    },
    // Leaves `a` after its first item (the server cancels it with consumer-drop) and keeps running on `b`.
    drop: async (ctx) => {
      for await (const _ of ctx.inputValues(streamField(ctx, 0))) break;
      for await (const _ of ctx.inputValues(streamField(ctx, 1)));
      return undefined;
    },
    gate: async (ctx) => {
      const input = ctx.inputValues(streamField(ctx, 0));
      await gate;
      for await (const _ of input);
      return undefined;
    },
    // Reads the outer stream; for each item, reads its nested input stream and echoes its items.
    nested: async (ctx) => {
      const outer = ctx.inputValues(streamField(ctx, 0));
      return ctx.output(
        (async function* () {
          for await (const item of outer) {
            const [name, inner] = (item.value as { fields: JsonObject[] }).fields;
            for await (const line of ctx.inputValues(inner))
              yield { kind: "string", value: `${String(name?.["value"])}:${String(line.value)}` };
          }
        })(),
      );
    },
  },
};

/** A host whose catalogue lookups fail: every start is an internal error. */
const brokenHost: AgentHost = {
  agentTypes(application: string, _environment: string): readonly AgentTypeDescriptor[] | undefined {
    if (application === "broken") throw new Error("database password is hunter2");
    return undefined;
  },
  invoke: () => Promise.reject(new Error("unreachable")),
};

export async function startProbeServer(
  limits: Partial<ServerLimits> = {},
  now?: () => number,
  keyring: Keyring = Keyring.generate("k1"),
  observers?: readonly PartialObserver[],
) {
  const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-probe-"));
  const store = new SqliteSessionStore({ dataDir, synchronous: "normal" });
  const demo = createDemoHost();
  const probe = new StaticAgentHost({ test: { default: [PROBE] } });
  const host: AgentHost = {
    agentTypes: (application, environment) =>
      application === "test"
        ? probe.agentTypes(application, environment)
        : application === "broken"
          ? brokenHost.agentTypes(application, environment)
          : demo.agentTypes(application, environment),
    invoke: (ctx) => (ctx.application === "test" ? probe.invoke(ctx) : demo.invoke(ctx)),
  };
  const server = createSessionServer({
    store,
    host,
    keyring,
    authenticator: (token) =>
      token === TOKEN ? { account: "acme", principal: "alice" } : token === "bob" ? { account: "acme", principal: "bob" } : undefined,
    authorizer: (request) => request.method !== "forbidden" && request.environment !== "secret",
    limits,
    ...(now === undefined ? {} : { now }),
    ...(observers === undefined ? {} : { observers }),
  });
  const address = await server.listen();
  return {
    url: address.url,
    httpUrl: address.httpUrl,
    server,
    store,
    dispose: async () => {
      await server.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// Type-checked under nodenext and bundler: the README's kind of server, with types from the server alone.
import {
  createSessionServer,
  defineAgentType,
  defineCatalogue,
  implement,
  t,
  Keyring,
  MemorySessionStore,
  recordField,
  StaticAgentHost,
  startEmbeddedServer,
  type AgentTypeDefinition,
  type Catalogue,
  type EmbeddedServer,
  type SchemaValueJson,
  type SessionStore,
  type StreamDirection,
} from "@golem-stream/server";

const text = { kind: "string", value: {} } as const;
const shouter: AgentTypeDefinition = {
  name: "shouter",
  constructorParameters: { root: { kind: "record", value: { fields: [] } } },
  config: [],
  methods: [
    {
      name: "shout",
      parameters: { root: { kind: "record", value: { fields: [{ name: "lines", body: { kind: "stream", value: { inner: text } } }] } } },
      result: { root: { kind: "stream", value: { inner: text } } },
    },
  ],
  implementations: {
    async shout(ctx) {
      const lines = ctx.inputValues(recordField(ctx.parameters, 0));
      return ctx.output(
        (async function* () {
          for await (const line of lines) yield { kind: "string", value: String(line.value).toUpperCase() } satisfies SchemaValueJson;
        })(),
      );
    },
  },
};
// The same agent type as a contract: plain JavaScript in and out.
const shouterContract = defineAgentType({
  name: "shouter",
  constructor: t.record({}),
  methods: { shout: { params: t.record({ lines: t.stream(t.string()) }), result: t.stream(t.string()) } },
});
export const typedShouter: AgentTypeDefinition = implement(shouterContract, {
  async shout(_ctx, { lines }) {
    return (async function* () {
      for await (const line of lines) yield line.toUpperCase();
    })();
  },
});
const store: SessionStore = new MemorySessionStore();
const direction: StreamDirection = "input";
export const sessions = createSessionServer({
  store,
  host: new StaticAgentHost({ app: { prod: [shouter] } }),
  keyring: Keyring.generate(),
  authenticator: (bearer) => (bearer === "s3cret" ? { account: "acme", principal: "me" } : undefined),
});
export const started: Promise<EmbeddedServer> = startEmbeddedServer({ dataDir: "./data", tokens: ["s3cret"], port: 0 });
// What a `serve --agents` module exports, and the same catalogue given to startEmbeddedServer.
export const catalogue: Catalogue = defineCatalogue({ applications: { app: { prod: [shouter, typedShouter] } } });
export const own: Promise<EmbeddedServer> = startEmbeddedServer({ dataDir: "./own", tokens: ["s3cret"], agents: catalogue, demo: true });
export { direction };

/**
 * An agent type the catalogue lacks (a misspelt contract name, the wrong environment): the
 * refusal names what was asked for and the agent types there are, at most eight of them. A
 * method the agent type lacks names the methods there are, the same way.
 */
import { echoContract } from "@golem-stream/contract/demo";
import { type AgentTypeDefinition } from "@golem-stream/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Client } from "../src/index.js";
import { startHostServer } from "./support/embedded.js";

/** A fresh graph each time: the definition's graphs are plain JSON objects (mutable arrays). */
const emptyRecord = () => ({ root: { kind: "record", value: { fields: [] } } });
const agentType = (name: string, methods = ["one"]): AgentTypeDefinition => ({
  name,
  constructorParameters: emptyRecord(),
  methods: methods.map((method) => ({ name: method, parameters: emptyRecord(), result: { root: { kind: "u32", value: {} } } })),
  config: [],
  implementations: Object.fromEntries(methods.map((method) => [method, async () => ({ kind: "u32", value: 1 })])),
});

const tenMethods = Array.from({ length: 10 }, (_, i) => `m${i}`);

let close: () => Promise<void>;
let client: Client;
beforeAll(
  async () =>
    ({ client, close } = await startHostServer({
      app: {
        few: [agentType("tally"), agentType("echo-two")],
        many: Array.from({ length: 11 }, (_, i) => agentType(`type-${i}`)),
        none: [],
        methods: [agentType("pair", ["sum", "count"]), agentType("wide", tenMethods)],
      },
    })),
);
afterAll(async () => close());

describe("an agent type the catalogue lacks", () => {
  it("names the application, the environment and the agent types there are", async () => {
    const misspelt = { ...echoContract, name: "tallly" } as unknown as typeof echoContract;
    await expect(client.connect(misspelt, { application: "app", environment: "few", constructor: { name: "x" } })).rejects.toMatchObject({
      kind: "rejected",
      code: "not-found",
      message: 'agent type "tallly" is not in the catalogue of application "app", environment "few" (known: "tally", "echo-two")',
    });
  });

  it("lists at most eight, then says how many more", async () => {
    await expect(client.agent({ application: "app", environment: "many", agentType: "type-x", constructorArgs: {} })).rejects.toMatchObject(
      {
        code: "not-found",
        message:
          'agent type "type-x" is not in the catalogue of application "app", environment "many" ' +
          '(known: "type-0", "type-1", "type-2", "type-3", "type-4", "type-5", "type-6", "type-7" and 3 more)',
      },
    );
  });

  it("says when there are none", async () => {
    await expect(client.agent({ application: "app", environment: "none", agentType: "echo", constructorArgs: {} })).rejects.toMatchObject({
      code: "not-found",
      message: 'agent type "echo" is not in the catalogue of application "app", environment "none" (it has no agent types)',
    });
  });
});

describe("a method the agent type lacks", () => {
  it("names the methods the agent type has, in catalogue order", async () => {
    const pair = await client.agent({ application: "app", environment: "methods", agentType: "pair", constructorArgs: {} });
    expect(() => pair.invoke("summ", {})).toThrow(
      expect.objectContaining({
        kind: "invalid-argument",
        code: "not-found",
        message: 'agent type "pair" has no method "summ" (methods: "sum", "count")',
      }),
    );
  });

  it("lists at most eight, then says how many more", async () => {
    const wide = await client.agent({ application: "app", environment: "methods", agentType: "wide", constructorArgs: {} });
    expect(() => wide.invoke("m10", {})).toThrow(
      expect.objectContaining({
        code: "not-found",
        message: 'agent type "wide" has no method "m10" (methods: "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7" and 2 more)',
      }),
    );
  });
});

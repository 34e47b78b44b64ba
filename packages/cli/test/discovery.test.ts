import { describe, expect, it } from "vitest";
import { t } from "@golem-stream/schema-value";
import { ProtocolError } from "@golem-stream/wire";
import { decodeCatalogue, findMethod, methodSchemaDigest } from "../src/discovery.js";
import { CliError, EXIT } from "../src/exit-codes.js";

const good = {
  application: "demo",
  environment: "default",
  agentTypes: [
    {
      name: "echo",
      constructorParameters: t.graph(t.record({ name: t.string() })),
      methods: [
        { name: "count", parameters: t.graph(t.record({ to: t.u32() })), result: t.graph(t.stream(t.u32())) },
        { name: "ping", parameters: t.graph(t.record({})) },
      ],
      config: [],
      futureMember: { ignored: true },
    },
  ],
};

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("decodeCatalogue", () => {
  it("decodes agent types, methods and graphs, ignoring members it does not use", () => {
    const [echo] = decodeCatalogue(JSON.stringify(good));
    expect(echo?.name).toBe("echo");
    expect(echo?.methods.map((m) => [m.name, m.result === undefined])).toEqual([
      ["count", false],
      ["ping", true],
    ]);
  });

  const broken: [string, unknown][] = [
    ["no agentTypes", { application: "demo" }],
    ["agentTypes not an array", { agentTypes: {} }],
    ["an agent type without a name", { agentTypes: [{ constructorParameters: good.agentTypes[0]!.constructorParameters, methods: [] }] }],
    ["a stream in the constructor", { agentTypes: [{ ...good.agentTypes[0], constructorParameters: t.graph(t.record({ s: t.stream(t.u8()) })) }] }],
    ["a dangling ref", { agentTypes: [{ ...good.agentTypes[0], methods: [{ name: "m", parameters: t.graph(t.ref("nope")) }] }] }],
    ["a method that is not an object", { agentTypes: [{ ...good.agentTypes[0], methods: [7] }] }],
    ["an empty method name", { agentTypes: [{ ...good.agentTypes[0], methods: [{ name: "", parameters: t.graph(t.record({})) }] }] }],
  ];
  it.each(broken)("refuses %s with a ProtocolError", (_, document) => {
    expect(thrown(() => decodeCatalogue(JSON.stringify(document)))).toBeInstanceOf(ProtocolError);
  });

  const wrongTyped: unknown[] = [undefined, null, 0, true, {}, [], "", "null", "[]", '"x"', "{", new Uint8Array([0xc3]), 1n];
  it.each(wrongTyped.map((v) => [typeof v === "bigint" ? "1n" : JSON.stringify(v) ?? String(v), v] as const))(
    "throws only ProtocolError for %s",
    (_, value) => {
      expect(thrown(() => decodeCatalogue(value as string))).toBeInstanceOf(ProtocolError);
    },
  );

  it("bounds the response before parsing it", () => {
    const huge = `{"agentTypes":[${" ".repeat(9 * 1024 * 1024)}]}`;
    expect((thrown(() => decodeCatalogue(huge)) as ProtocolError).code).toBe("limit-exceeded");
  });
});

describe("findMethod and the schema digest", () => {
  const catalogue = { application: "demo", environment: "default", agentTypes: decodeCatalogue(JSON.stringify(good)) };

  it("names what exists when the agent type or method does not", () => {
    const noType = thrown(() => findMethod(catalogue, "nope", "count")) as CliError;
    expect(noType.exitCode).toBe(EXIT.usage);
    expect(noType.message).toMatch(/known: echo/);
    const noMethod = thrown(() => findMethod(catalogue, "echo", "nope")) as CliError;
    expect(noMethod.message).toMatch(/methods: count, ping/);
  });

  it("gives each method its own stable digest", () => {
    const echo = catalogue.agentTypes[0]!;
    const [count, ping] = echo.methods;
    const again = decodeCatalogue(JSON.stringify(good))[0]!;
    expect(methodSchemaDigest(echo, count!)).toMatch(/^[0-9a-f]{64}$/);
    expect(methodSchemaDigest(echo, count!)).toBe(methodSchemaDigest(again, again.methods[0]!));
    expect(methodSchemaDigest(echo, count!)).not.toBe(methodSchemaDigest(echo, ping!));
  });
});

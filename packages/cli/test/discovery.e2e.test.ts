import { createServer } from "node:http";
import type { RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { t } from "@golem-stream/schema-value";
import { ProtocolError } from "@golem-stream/wire";
import { decodeCatalogue, fetchCatalogue, findMethod, methodSchemaDigest } from "../src/discovery.js";
import { CliError, EXIT } from "../src/exit-codes.js";
import { DEFAULT_MAX_CATALOGUE_BYTES } from "../src/options.js";

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

/** fetchCatalogue against a local server answering with `handler`: the catalogue, or what it threw. */
async function catalogueFrom(
  handler: RequestListener,
  signal = AbortSignal.timeout(10_000),
  maxBytes = DEFAULT_MAX_CATALOGUE_BYTES,
): Promise<unknown> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    return await fetchCatalogue({ url: origin, httpOrigin: origin, token: "t" }, "demo", "default", signal, maxBytes).catch(
      (e: unknown) => e,
    );
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

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

  it("reads the declared configuration entries (codegen writes them into contracts); absent means none", () => {
    const withConfig = { agentTypes: [{ ...good.agentTypes[0], config: [{ path: ["provider", "model"] }] }] };
    expect(decodeCatalogue(JSON.stringify(withConfig))[0]?.config).toEqual([{ path: ["provider", "model"] }]);
    const { config: _, ...without } = good.agentTypes[0]!;
    expect(decodeCatalogue(JSON.stringify({ agentTypes: [without] }))[0]?.config).toEqual([]);
  });

  it("a discovery document it cannot read is the server breaking the protocol: exit 4, not an internal error", async () => {
    const error = await catalogueFrom((_, response) => response.end('{"agentTypes":7}'));
    expect(error).toBeInstanceOf(CliError);
    expect(error).toMatchObject({ exitCode: EXIT.connectionLost, code: "invalid-message" });
  });

  it("sends the bearer token and reads the catalogue", async () => {
    let authorization: string | undefined;
    const catalogue = await catalogueFrom((request, response) => {
      authorization = request.headers.authorization;
      response.end(JSON.stringify(good));
    });
    expect(authorization).toBe("Bearer t");
    expect((catalogue as { agentTypes: { name: string }[] }).agentTypes.map((a) => a.name)).toEqual(["echo"]);
  });

  it("refuses a catalogue larger than --max-catalogue-bytes before buffering it, declared or streamed: exit 4, limit-exceeded, naming the flag", async () => {
    const declared = await catalogueFrom((_, response) => {
      response.writeHead(200, { "content-length": String(9 * 1024 * 1024 + 1) });
      response.write("{");
    });
    expect(declared).toMatchObject({ exitCode: EXIT.connectionLost, code: "limit-exceeded" });
    expect((declared as Error).message).toBe(
      'the catalogue of application "demo", environment "default" is larger than --max-catalogue-bytes (8MiB; the server declares ' +
        "9437185 bytes): run the command again with --max-catalogue-bytes 10MiB",
    );
    const streamed = await catalogueFrom(
      (_, response) => {
        // Chunked, no length: the bound is met while reading.
        const chunk = " ".repeat(1024 * 1024);
        const more = () => {
          while (response.write(chunk));
          response.once("drain", more);
        };
        response.on("error", () => undefined);
        more();
      },
      undefined,
      1536 * 1024,
    );
    expect(streamed).toMatchObject({ exitCode: EXIT.connectionLost, code: "limit-exceeded" });
    expect((streamed as Error).message).toBe(
      'the catalogue of application "demo", environment "default" is larger than --max-catalogue-bytes (1536KiB): ' +
        "run the command again with a larger --max-catalogue-bytes (at most 256MiB)",
    );
    const past = await catalogueFrom((_, response) => {
      response.writeHead(200, { "content-length": String(300 * 1024 * 1024) });
      response.write("{");
    });
    expect((past as Error).message).toMatch(
      /declares 314572800 bytes\): more than the CLI can read \(--max-catalogue-bytes is at most 256MiB\)$/,
    );
  });

  it("reads a catalogue past the default bound when --max-catalogue-bytes is larger", async () => {
    const padded = JSON.stringify(good).replace("{", `{"padding":"${"x".repeat(DEFAULT_MAX_CATALOGUE_BYTES)}",`);
    const catalogue = await catalogueFrom((_, response) => response.end(padded), undefined, 16 * 1024 * 1024);
    expect((catalogue as { agentTypes: { name: string }[] }).agentTypes.map((a) => a.name)).toEqual(["echo"]);
  });

  it("does not follow a redirect (the request carries the token): says where it points", async () => {
    const error = await catalogueFrom((_, response) => {
      response.writeHead(301, { location: "https://elsewhere.example/v1/agents/types" });
      response.end();
    });
    expect(error).toMatchObject({ exitCode: EXIT.connectionLost });
    expect((error as Error).message).toMatch(
      /^discovery failed: HTTP 301, a redirect to https:\/\/elsewhere\.example\/v1\/agents\/types \(not followed/,
    );
  });

  it("a server that does not answer in time: no answer within --timeout, exit 4", async () => {
    const error = await catalogueFrom(() => undefined, AbortSignal.timeout(200));
    expect(error).toMatchObject({ exitCode: EXIT.connectionLost });
    expect((error as Error).message).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+: no answer within --timeout$/);
  });

  const broken: [string, unknown][] = [
    ["config not an array", { agentTypes: [{ ...good.agentTypes[0], config: {} }] }],
    ["a config path that is not strings", { agentTypes: [{ ...good.agentTypes[0], config: [{ path: [1] }] }] }],
    ["no agentTypes", { application: "demo" }],
    ["agentTypes not an array", { agentTypes: {} }],
    ["an agent type without a name", { agentTypes: [{ constructorParameters: good.agentTypes[0]!.constructorParameters, methods: [] }] }],
    [
      "a stream in the constructor",
      { agentTypes: [{ ...good.agentTypes[0], constructorParameters: t.graph(t.record({ s: t.stream(t.u8()) })) }] },
    ],
    ["a dangling ref", { agentTypes: [{ ...good.agentTypes[0], methods: [{ name: "m", parameters: t.graph(t.ref("nope")) }] }] }],
    ["a method that is not an object", { agentTypes: [{ ...good.agentTypes[0], methods: [7] }] }],
    ["an empty method name", { agentTypes: [{ ...good.agentTypes[0], methods: [{ name: "", parameters: t.graph(t.record({})) }] }] }],
  ];
  it.each(broken)("refuses %s with a ProtocolError", (_, document) => {
    expect(thrown(() => decodeCatalogue(JSON.stringify(document)))).toBeInstanceOf(ProtocolError);
  });

  const wrongTyped: unknown[] = [undefined, null, 0, true, {}, [], "", "null", "[]", '"x"', "{", new Uint8Array([0xc3]), 1n];
  it.each(wrongTyped.map((v) => [typeof v === "bigint" ? "1n" : (JSON.stringify(v) ?? String(v)), v] as const))(
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

/**
 * Reading the catalogue and asking whether this origin may open sessions, against a scripted
 * `fetch`: every failure is a sentence a person can act on, with the server's code when it sent one.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { t } from "@golem-stream/schema-value";
import { checkOriginAllowed, ConsoleError, loadCatalogue } from "../src/web/catalogue.js";

type Answer = Response | Error;
const calls: { url: string; init: RequestInit | undefined }[] = [];

function serve(answer: Answer): void {
  vi.stubGlobal("fetch", (url: string, init?: RequestInit) => {
    calls.push({ url, init });
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  });
}

const json = (status: number, body: unknown): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

async function refusal(promise: Promise<unknown>): Promise<ConsoleError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConsoleError);
  return error as ConsoleError;
}

afterEach(() => {
  vi.unstubAllGlobals();
  calls.length = 0;
});

const CATALOGUE = {
  agentTypes: [
    {
      name: "counter",
      constructorParameters: t.graph(t.record({ start: t.u32() })),
      methods: [
        { name: "count", parameters: t.graph(t.record({ to: t.u32() })), result: t.graph(t.stream(t.u32())) },
        { name: "reset", parameters: t.graph(t.record({})) },
      ],
    },
  ],
};

describe("loadCatalogue", () => {
  it("asks for the application and environment with the token, and decodes every graph", async () => {
    serve(json(200, CATALOGUE));
    const types = await loadCatalogue("tok", "my app", "prod");
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe("/v1/agents/types?application=my+app&environment=prod");
    expect(calls[0]!.init).toMatchObject({ headers: { authorization: "Bearer tok" }, cache: "no-store", credentials: "omit" });
    expect(types.map((type) => type.name)).toEqual(["counter"]);
    const [count, reset] = types[0]!.methods;
    expect(count!.name).toBe("count");
    expect(count!.result?.resolve(count!.result.root).kind).toBe("stream");
    expect(reset!.result).toBeUndefined();
    const start = types[0]!.constructorParameters;
    expect(start.resolve(start.root)).toMatchObject({ kind: "record", value: { fields: [{ name: "start" }] } });
  });

  it.each([
    [401, { code: "unauthenticated" }, "The server refused this token (unauthenticated). Check it and sign in again.", "unauthenticated"],
    [
      403,
      { code: "forbidden" },
      "Forbidden: this token may not read the catalogue, or the server does not allow pages of http://console.test (start serve with --allow-origin http://console.test).",
      "forbidden",
    ],
    [404, { code: "not-found" }, 'There is no application "app" with environment "env" on this server.', "not-found"],
    [500, { code: "internal-error" }, "The server refused the catalogue request (HTTP 500, internal-error).", "internal-error"],
    [502, { message: "no code" }, "The server refused the catalogue request (HTTP 502).", undefined],
  ])("HTTP %d %j is explained", async (status, body, message, code) => {
    serve(json(status, body));
    const error = await refusal(loadCatalogue("tok", "app", "env"));
    expect(error.message).toBe(message);
    expect(error.code).toBe(code);
  });

  it("a forbidden code with another status is plain Forbidden", async () => {
    serve(json(401, { code: "forbidden" }));
    expect((await refusal(loadCatalogue("tok", "app", "env"))).message).toBe("Forbidden.");
  });

  it("says when the server cannot be reached, answers something else than JSON, or more than 8 MiB", async () => {
    serve(new TypeError("fetch failed"));
    expect((await refusal(loadCatalogue("tok", "a", "e"))).message).toBe("The server cannot be reached.");
    serve(new Response("<html>proxy error</html>", { status: 502 }));
    expect((await refusal(loadCatalogue("tok", "a", "e"))).message).toBe("The server answered HTTP 502 with something that is not JSON.");
    serve(new Response(" ".repeat(8 * 1024 * 1024 + 1)));
    expect((await refusal(loadCatalogue("tok", "a", "e"))).message).toBe("The catalogue is larger than this console reads (8 MiB).");
    serve(json(200, { types: [] }));
    expect((await refusal(loadCatalogue("tok", "a", "e"))).message).toBe("The catalogue has no agentTypes list.");
  });

  it("a graph that does not decode is refused, not shown half-read", async () => {
    serve(json(200, { agentTypes: [{ name: "x", constructorParameters: { root: { kind: "nope", value: {} } }, methods: [] }] }));
    await expect(loadCatalogue("tok", "a", "e")).rejects.toThrow(/schema graph/);
  });
});

describe("checkOriginAllowed", () => {
  it("asks with OPTIONS and this page's origin, and passes when the server does not answer 403", async () => {
    serve(new Response(null, { status: 204 }));
    await expect(checkOriginAllowed()).resolves.toBeUndefined();
    expect(calls[0]).toMatchObject({ url: "/v1/agents/types", init: { method: "OPTIONS", referrerPolicy: "origin", credentials: "omit" } });
  });

  it("403 names this origin and how to allow it", async () => {
    serve(new Response(null, { status: 403 }));
    const error = await refusal(checkOriginAllowed());
    expect(error.code).toBe("forbidden");
    expect(error.message).toBe(
      "This server does not let pages of http://console.test open sessions. Open the console at the address golem-stream serve printed, or start serve with --allow-origin http://console.test.",
    );
  });

  it("a network failure is 'cannot be reached'", async () => {
    serve(new TypeError("fetch failed"));
    expect((await refusal(checkOriginAllowed())).message).toBe("The server cannot be reached.");
  });
});

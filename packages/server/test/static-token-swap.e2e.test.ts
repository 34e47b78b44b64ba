/**
 * `EmbeddedServer.setTokens`: the new list authenticates every handshake
 * after it (an added token is accepted, a removed one refused 401, a resume
 * included), while connections opened before it keep the caller and the
 * rights they were authenticated with: a session running on a removed
 * token runs to its end, and a connection opened on it before the change
 * may still start one, even beside an authorizer that refuses everyone
 * else. A list it would refuse throws and changes nothing.
 */
import { afterEach, expect, it } from "vitest";
import { RawClient, TOKEN, demoStart, outputValues, resumeAttach, startTestServer, v, type TestServer } from "./helpers.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

async function refusedStatus(url: string, token: string): Promise<string> {
  return RawClient.connect(url, token).then(
    (client) => {
      client.socket.close();
      return "accepted";
    },
    (error: Error) => error.message,
  );
}

it("an added token is accepted and a removed one refused from the next handshake on; a session running on the removed one runs to its end", async () => {
  server = await startTestServer({ tokens: [TOKEN] });
  const running = await RawClient.connect(server.url, TOKEN);
  running.send(demoStart("count", v.record(v.u32(30), v.u32(20))));
  const accepted = await running.nextOf("invocationAccepted");
  await running.nextOf("outputStreamItem");
  expect(await refusedStatus(server.url, "added-token")).toMatch(/401/);

  server.setTokens(["added-token"]);
  expect(await refusedStatus(server.url, "added-token")).toBe("accepted");
  expect(await refusedStatus(server.url, TOKEN)).toMatch(/401/);

  const { messages, closed } = await running.all();
  expect(closed.code).toBe(1000);
  const result = messages.find((m) => m.type === "invocationResult");
  if (result?.type !== "invocationResult") throw new Error("no result");
  expect(outputValues(messages, result.mappings[0]!.channel)).toHaveLength(30);
  expect(messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
  // Its session token names the removed token's caller: nobody may resume it now.
  expect(await refusedStatus(server.url, TOKEN)).toMatch(/401/);
  const resumer = await RawClient.connect(server.url, "added-token");
  resumer.send(resumeAttach("resume", accepted.sessionToken));
  expect(await resumer.nextOf("invocationRejected")).toMatchObject({ code: "invalid-token" });
});

it("a connection opened before the change keeps its rights beside an authorizer that refuses everyone else", async () => {
  server = await startTestServer({
    tokens: [TOKEN],
    authentication: { authenticator: () => ({ account: "jwt", principal: "someone" }), authorizer: () => false },
  });
  const early = await RawClient.connect(server.url, TOKEN);
  server.setTokens(["added-token"]);
  early.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
  expect((await early.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });

  // The same bearer now reaches the other authenticator, whose authorizer refuses it.
  const late = await RawClient.connect(server.url, TOKEN);
  late.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
  expect(await late.nextOf("invocationRejected")).toMatchObject({ code: "forbidden" });
  const added = await RawClient.connect(server.url, "added-token");
  added.send(demoStart("count", v.record(v.u32(2), v.u32(0))));
  expect((await added.all()).messages.at(-1)).toEqual({ type: "invocationFinished", outcome: { kind: "success" } });
});

it("a list it would refuse throws a TypeError and the tokens stay", async () => {
  server = await startTestServer({ tokens: [TOKEN] });
  expect(() => server!.setTokens([])).toThrow(TypeError);
  expect(() => server!.setTokens([{ token: "x", account: "token-bad" }])).toThrow(/token account/);
  expect(await refusedStatus(server.url, TOKEN)).toBe("accepted");
});

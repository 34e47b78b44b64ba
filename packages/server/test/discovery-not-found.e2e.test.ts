/**
 * The discovery endpoint's `not-found` names the application environments the server serves that
 * the caller may read (the authorizer's `discover`), so that `golem-stream types` without `-a`
 * against a server of one's own agents says which to ask for; one the caller may not read is
 * never named, and a host that cannot list its environments names none.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Keyring } from "@golem-stream/tokens";
import { CombinedAgentHost, SqliteSessionStore, StaticAgentHost, createSessionServer, type AgentHost } from "../src/index.js";
import { ECHO_AGENT_TYPE } from "../src/demo/methods.js";

const TOKEN = "discovery-token-0123456789";
const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-discovery-"));
const store = new SqliteSessionStore({ dataDir, synchronous: "normal" });
afterAll(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const listed = new StaticAgentHost({
  mine: { default: [ECHO_AGENT_TYPE], secret: [ECHO_AGENT_TYPE] },
  "two words": { "e/1": [ECHO_AGENT_TYPE] },
});

/** A server of `host` whose authorizer refuses every environment named `secret`; the not-found answer's message. */
async function notFoundMessage(host: AgentHost): Promise<string> {
  const sessions = createSessionServer({
    store,
    host,
    keyring: Keyring.generate(),
    authenticator: (token) => (token === TOKEN ? { account: "a", principal: "p" } : undefined),
    authorizer: (request) => request.environment !== "secret",
  });
  const { httpUrl } = await sessions.listen(0, "127.0.0.1");
  try {
    const response = await fetch(`${httpUrl}/v1/agents/types?application=demo&environment=default`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(404);
    const body = (await response.json()) as { code: string; error: string };
    expect(body.code).toBe("not-found");
    return body.error;
  } finally {
    await sessions.close();
  }
}

let ownOnly: string;
beforeAll(async () => {
  ownOnly = await notFoundMessage(listed);
});

it("names the environments the caller may read, and never one it may not", () => {
  expect(ownOnly).toBe('the application or environment does not exist; this server serves mine/default, ["two words","e/1"]');
  expect(ownOnly).not.toContain("secret");
});

it("a combined host names each of its hosts' environments; a host that cannot list them names none", async () => {
  const unlisted: AgentHost = { agentTypes: (a, e) => listed.agentTypes(a, e), invoke: (context) => listed.invoke(context) };
  expect(await notFoundMessage(unlisted)).toBe("the application or environment does not exist");
  expect(await notFoundMessage(new CombinedAgentHost([unlisted, new StaticAgentHost({ other: { prod: [ECHO_AGENT_TYPE] } })]))).toBe(
    "the application or environment does not exist; this server serves other/prod",
  );
});

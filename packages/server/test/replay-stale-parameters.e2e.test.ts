/**
 * A replayable invocation whose method's parameters changed type while the server was down (the
 * module edited and served again under the same names): the parameters it started with no longer
 * fit, so it is not run again on them. It fails `invocation-failed`, and the log says why
 * (`invocation.interrupted`, with the path and rule that no longer hold), where the re-run used to
 * start and fail on its first conversion with nothing saying the catalogue had changed.
 */
import { afterEach, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineAgentType, t } from "@golem-stream/contract";
import { defineCatalogue, implement } from "../src/index.js";
import { RawClient, agentStart, startTestServer, v, type TestServer, resumeAttach } from "./helpers.js";
import { recordingLogger } from "./support/recording-logger.js";

const dataDir = mkdtempSync(join(tmpdir(), "golem-stream-stale-parameters-"));
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  rmSync(dataDir, { recursive: true, force: true });
});

/** `greet` of one version: its `name` a string, or (the edit) a u32; it waits until its server shuts down. */
function catalogue(name: "string" | "u32") {
  const greeter = defineAgentType({
    name: "greeter",
    constructor: t.record({}),
    durability: "replay",
    methods: { greet: { params: t.record({ name: name === "string" ? t.string() : t.u32() }), result: t.string() } },
  });
  let ran: () => void = () => undefined;
  const running = new Promise<void>((resolve) => (ran = resolve));
  const agents = defineCatalogue({
    applications: {
      test: {
        default: [
          implement(greeter, {
            greet: (ctx) =>
              new Promise<string>((_resolve, reject) => {
                ran();
                ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error), { once: true });
              }),
          }),
        ],
      },
    },
  });
  return { agents, running };
}

it("is not run again on parameters that no longer fit: it fails, and invocation.interrupted says why", async () => {
  const first = catalogue("string");
  const before = await startTestServer({ dataDir, agents: first.agents });
  servers.push(before);
  const client = await RawClient.connect(before.url);
  client.send(agentStart("test", "greeter", "greet", v.record(v.str("ada"))));
  const accepted = await client.nextOf("invocationAccepted");
  await first.running;
  await before.close();
  servers.splice(0);

  const log = recordingLogger();
  const edited = catalogue("u32");
  const after = await startTestServer({ dataDir, agents: edited.agents, logger: log.logger });
  servers.push(after);
  expect(log.lines.find((line) => line["event"] === "invocation.interrupted")).toMatchObject({
    method: "greet",
    reason: expect.stringMatching(
      /^its parameters do not fit the method.s schema any more \(the catalogue changed .*\): methodParameters.fields\[0\]: expected a u32 value/,
    ),
  });
  expect(log.lines.some((line) => line["event"] === "invocation.replay")).toBe(false);
  const back = await RawClient.connect(after.url);
  back.send(resumeAttach("resume", accepted.sessionToken));
  expect((await back.all()).messages.at(-1)).toMatchObject({
    type: "invocationFinished",
    outcome: { kind: "failure", code: "invocation-failed" },
  });
});

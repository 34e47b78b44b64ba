/**
 * A server that breaks the protocol (protocol §2, §7, §8, §11, decisions §8):
 * the client fails the invocation with the public code of the violation, and
 * does not retry (a violation is not an uncertain outcome).
 */
import type { ServerMessage } from "@golem-stream/wire";
import { ensure, show } from "../../check.js";
import type { ClientContext } from "../context.js";
import type { ScriptedPeer } from "../scripted-server.js";
import { ScriptedSession, nextAttach, provisionalRefOf, type Attach, type ScriptedOutput } from "../session-script.js";
import { defineScenarios, type ScenarioSpec } from "../scenario.js";
import { COUNT, REVERSE, acceptWithResult, str } from "./common.js";

interface Misbehaviour {
  readonly name: string;
  readonly ref: string;
  /** What the server does wrong, for the expectation. */
  readonly what: string;
  /** The public code the client must report; the first is the one the expectation names, the others are accepted too (docs/protocol/conformance.md). */
  readonly code: string | readonly [string, ...string[]];
  readonly start?: typeof COUNT | typeof REVERSE;
  /** Serves the one connection; `out` is announced on channel 1 by the result unless the script does otherwise. */
  act(peer: ScriptedPeer, attach: Attach, session: ScriptedSession, out: ScriptedOutput): void;
}

const MISBEHAVIOURS: readonly Misbehaviour[] = [
  {
    name: "malformed-text-message",
    ref: "§2, §11",
    what: "sends a text message of an unknown type after acceptance",
    code: "invalid-message",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.sendRaw('{"type":"outputStreamSurprise","version":1}');
    },
  },
  {
    name: "malformed-json",
    ref: "§2, §11",
    what: "sends a text message that is not JSON",
    code: "invalid-message",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.sendRaw('{"type":"outputStreamItem",');
    },
  },
  {
    name: "malformed-binary-envelope",
    ref: "§7, §11",
    what: "sends a binary message whose metadata length exceeds the message",
    code: "invalid-message",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.sendRaw(Uint8Array.of(0, 0, 1, 0, 0x7b));
    },
  },
  {
    name: "sequence-gap",
    ref: "§8, §6.4",
    what: "sends output items 0 and 2 (skipping 1)",
    code: "protocol-error",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.send(out.item(1, 0));
      peer.send(out.item(1, 2));
    },
  },
  {
    name: "premature-item",
    ref: "§1, §8",
    what: "sends an output item before invocationAccepted",
    code: ["protocol-error", "invalid-channel"],
    act: (peer, _attach, _session, out) => peer.send(out.item(1, 0)),
  },
  {
    name: "unknown-channel",
    ref: "§8",
    what: "sends an output item on a channel it never announced",
    code: "invalid-channel",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.send(out.item(7, 0));
    },
  },
  {
    name: "wrong-direction-channel",
    ref: "§8",
    what: "sends an output item on the channel of an input stream",
    code: "invalid-channel",
    start: REVERSE,
    act: (peer, attach, session, out) => {
      const input = session.input();
      session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach as Extract<Attach, { type: "invocationStart" }>))]);
      peer.send(out.item(1, 0));
    },
  },
  {
    name: "value-off-schema",
    ref: "§3, §3.3",
    what: "sends a string item on a stream<u32>",
    code: "validation-error",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.send({ ...(out.item(1, 0) as Extract<ServerMessage, { type: "outputStreamItem" }>), value: str("not a u32") });
    },
  },
  {
    name: "finished-before-stream-end",
    ref: "§6.9, decisions §8",
    what: "sends a successful invocationFinished while an output stream has no terminal",
    code: "protocol-error",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.send(out.item(1, 0));
      peer.send({ type: "invocationFinished", outcome: { kind: "success" } });
    },
  },
  {
    name: "end-at-wrong-sequence",
    ref: "§6.5",
    what: "ends an output stream after items 0-1 with sequence 5",
    code: "protocol-error",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      peer.send(out.item(1, 0));
      peer.send(out.item(1, 1));
      peer.send(out.end(1, 5));
    },
  },
  {
    name: "acceptance-of-another-attempt",
    ref: "§6.1, §9",
    what: "accepts naming another attempt id",
    code: "protocol-error",
    act: (peer, attach, session) => session.accept(peer, { ...attach, attemptId: "00000000-0000-4000-8000-000000000000" }),
  },
  {
    name: "ack-beyond-sent",
    ref: "§6.6",
    what: "acknowledges 10 input items when none was sent",
    code: "protocol-error",
    start: REVERSE,
    act: (peer, attach, session) => {
      const input = session.input();
      session.accept(peer, attach, [input.mapping(1, 0, false, provisionalRefOf(attach as Extract<Attach, { type: "invocationStart" }>))]);
      peer.send(input.ack(1, 10));
    },
  },
  {
    name: "second-acceptance",
    ref: "§6.1, §8",
    what: "sends invocationAccepted twice on one connection",
    code: "protocol-error",
    act: (peer, attach, session) => {
      session.accept(peer, attach);
      session.accept(peer, attach);
    },
  },
  {
    name: "channel-mapped-twice",
    ref: "§8, §4.3",
    what: "announces, in an output item, a second stream on the channel that item uses",
    code: "invalid-channel",
    act: (peer, attach, session, out) => {
      acceptWithResult(peer, attach, session, out);
      const other = session.output();
      peer.send({ ...(out.item(1, 0) as Extract<ServerMessage, { type: "outputStreamItem" }>), mappings: [other.mapping(1)] });
    },
  },
];

async function expectViolation(ctx: ClientContext, m: Misbehaviour): Promise<string> {
  const session = new ScriptedSession(ctx.tokens);
  const out = session.output();
  await ctx.begin(async (peer) => m.act(peer, await nextAttach(peer), session, out), m.start ?? COUNT);
  const codes: readonly string[] = typeof m.code === "string" ? [m.code] : m.code;
  const outcome = await ctx.outcome();
  ensure(outcome.type === "error", `the invocation ${outcome.type}; expected it to fail with ${codes.join(" or ")}`);
  ensure(
    outcome.code !== undefined && codes.includes(outcome.code),
    `the invocation failed with ${show({ category: outcome.category, code: outcome.code })}, expected code ${codes.join(" or ")}`,
  );
  ensure(outcome.category === "server-violation", `category ${outcome.category}, expected server-violation`);
  ensure(ctx.server.peers.length === 1, `the client opened ${ctx.server.peers.length} connections: a violation is not retried`);
  return `failed with ${outcome.code}`;
}

export const violationScenarios = defineScenarios(
  "violations",
  MISBEHAVIOURS.map((m): ScenarioSpec => ({
    name: m.name,
    ref: m.ref,
    expectation: `a server that ${m.what}: the invocation fails as a server violation with code ${typeof m.code === "string" ? m.code : m.code.join(" or ")}, without a retry`,
    run: (ctx) => expectViolation(ctx, m),
  })),
);

/**
 * The fault table: each fault breaks one rule of the protocol, and `caughtBy`
 * lists the checks that must fail because of it (each of them, not just one).
 */
import type { ServerMessage } from "@golem-stream/wire";
import { loadVectors, type MalformedCase } from "../../src/index.js";
import type { Fault, Link, Out } from "./fault-proxy.js";
import { OTHER_PRINCIPAL_TOKEN, TOKEN } from "./server.js";

/** Every decoding check whose vector the project's server refuses with close 1002 (all but the oversize cases). */
const DECODING_1002 = loadVectors<{ cases: MalformedCase[] }>("malformed.json")
  .cases.filter((c) => c.direction === "client" && c.expectedCode === "invalid-message")
  .map((c) => `decoding.${c.binary ? "binary-" : ""}${c.name}`);

/** The oversize vectors: refused with limit-exceeded, or (too deep, too large to read) closed 1009 at once. */
const DECODING_LIMITS = loadVectors<{ cases: MalformedCase[] }>("malformed.json")
  .cases.filter((c) => c.direction === "client" && c.expectedCode === "limit-exceeded")
  .map((c) => `decoding.${c.binary ? "binary-" : ""}${c.name}`);

export interface FaultCase {
  readonly fault: Fault;
  readonly caughtBy: readonly string[];
  /** Needs the restart section (run against a restartable server). */
  readonly restart?: boolean;
  /**
   * Its checks need server settings (`Check.needs`): run against the bounded server
   * (support/server.ts), one fault at a time, since they count one principal's sockets.
   */
  readonly bounded?: boolean;
}

type S = ServerMessage;
const rewrite = (name: string, description: string, f: (m: S, link: Link) => Out<S>[], caughtBy: string[]): FaultCase => ({
  fault: { name, description, toClient: f },
  caughtBy,
});
const when =
  <T extends S["type"]>(type: T, f: (m: Extract<S, { type: T }>, link: Link) => Out<S>[]) =>
  (m: S, link: Link): Out<S>[] =>
    m.type === type ? f(m as Extract<S, { type: T }>, link) : [m];

/** Remembers every channel announced to the client on this connection, with its direction. */
function announced(m: S, link: Link): void {
  const table = (link.memo.get("channels") as Map<number, string> | undefined) ?? new Map<number, string>();
  link.memo.set("channels", table);
  if ("mappings" in m) for (const mapping of m.mappings) table.set(mapping.channel, mapping.direction);
}

function channelsOf(link: Link): Map<number, string> {
  return (link.memo.get("channels") as Map<number, string> | undefined) ?? new Map<number, string>();
}

/** Answers the client as a server that found a violation would, and closes 1002. */
function violate(link: Link, code: "input-conflict" | "invalid-channel" | "protocol-error"): [] {
  const accepted = link.toClientLog.find((x) => x.type === "invocationAccepted");
  link.sendToClient({
    type: "invocationRejected",
    code,
    message: "injected",
    retryable: true,
    ...(accepted?.type === "invocationAccepted" ? { attemptId: accepted.attemptId } : {}),
  });
  link.closeClient(1002);
  return [];
}

/**
 * A re-run after a restart that does not follow the journal, seen from the
 * client: on an attachment that resumes an invocation after the server went
 * away (closed 1001), `change` rewrites the output items of each channel and
 * every later item and end is renumbered by how many items it added or
 * removed, so the sequences stay contiguous and only the values show the
 * fault (a server that appends what the re-run produced as new items).
 */
function rerunAfterRestart(
  name: string,
  description: string,
  change: (item: Extract<S, { type: "outputStreamItem" }>, index: number) => S[],
): Fault {
  return {
    name,
    description,
    closeCode: (code, link) => {
      if (code === 1001) link.state.memo.set("restarted", true);
      return code;
    },
    toServer: (m, link) => {
      if (m.type === "resumeAttach" && link.state.memo.has("restarted")) link.memo.set("rerun", true);
      return [m];
    },
    toClient: (m, link) => {
      if (!link.memo.has("rerun") || (m.type !== "outputStreamItem" && m.type !== "outputStreamEnd")) return [m];
      const shifts =
        (link.memo.get("shifts") as Map<number, { seen: number; shift: bigint }> | undefined) ??
        new Map<number, { seen: number; shift: bigint }>();
      link.memo.set("shifts", shifts);
      const channel = shifts.get(m.channel) ?? { seen: 0, shift: 0n };
      shifts.set(m.channel, channel);
      const moved = { ...m, sequence: m.sequence + channel.shift };
      if (moved.type === "outputStreamEnd") return [moved];
      const out = change(moved, channel.seen++).map((x, i) =>
        x.type === "outputStreamItem" ? { ...x, sequence: moved.sequence + BigInt(i) } : x,
      );
      channel.shift += BigInt(out.length - 1);
      return out;
    },
  };
}

/**
 * A `journal` item (record{index, step, now, random}) with `fields` replaced by index: what a
 * re-run that got other journaled values than the run before produces. Other items as they are.
 */
function withJournaled(
  item: Extract<S, { type: "outputStreamItem" }>,
  fields: (step: string, now: string, random: number) => [string, string, number],
): S {
  const record = item.value.value as { fields?: { kind: string; value: unknown }[] } | undefined;
  if (item.value.kind !== "record" || record?.fields?.length !== 4) return item;
  const [index, step, now, random] = record.fields;
  const [newStep, newNow, newRandom] = fields(step!.value as string, now!.value as string, random!.value as number);
  const changed = [index!, { ...step!, value: newStep }, { ...now!, value: newNow }, { ...random!, value: newRandom }];
  return { ...item, value: { kind: "record", value: { fields: changed } } } as S;
}

export const MORE_FAULTS: readonly FaultCase[] = [
  {
    fault: {
      name: "detach-cancels-outputs",
      description: "cancels every output stream when the client's transport goes away",
      toClient: (m, link) => {
        announced(m, link);
        return [m];
      },
      onClientClose: (link) =>
        [...channelsOf(link)]
          .filter(([, d]) => d === "output")
          .map(([channel]) => ({ type: "streamCancel" as const, channel, reason: "cancelled" as const })),
    },
    caughtBy: ["cancel.detach-does-not-cancel"],
  },
  rewrite(
    "truncate-large-values",
    "cuts string values longer than 64 KiB",
    when("outputStreamItem", (m) => [
      m.value.kind === "string" && (m.value.value as string).length > 65536
        ? { ...m, value: { kind: "string", value: (m.value.value as string).slice(0, 65536) } }
        : m,
    ]),
    ["limits.large-item-within-limits"],
  ),
  {
    fault: {
      name: "takeover-as-resume",
      description: "treats takeover like resume (stale tokens refused)",
      toServer: (m) => (m.type === "resumeAttach" ? [{ ...m, operation: "resume" }] : [m]),
    },
    caughtBy: ["resume.stale-takeover-accepted"],
  },
  {
    fault: {
      name: "ignore-unknown-cursors",
      description: "drops cursors it never issued instead of refusing them",
      toClient: (m, link) => {
        if ("cursorToken" in m && m.cursorToken !== undefined) link.state.memo.set(`cursor-${m.cursorToken}`, true);
        return [m];
      },
      toServer: (m, link) =>
        m.type === "resumeAttach" ? [{ ...m, outputCursors: m.outputCursors.filter((c) => link.state.memo.has(`cursor-${c}`)) }] : [m],
    },
    caughtBy: ["resume.tampered-cursor"],
  },
  {
    fault: {
      name: "duplicate-is-conflict",
      description: "treats an identical resend of an input item as input-conflict",
      toServer: (m, link) => {
        if (m.type !== "inputStreamItem") return [m];
        const key = `item-${m.channel}-${m.sequence}`;
        if (link.memo.has(key)) return violate(link, "input-conflict");
        link.memo.set(key, true);
        return [m];
      },
    },
    caughtBy: ["channels.identical-duplicate", "channels.duplicate-range-same-ack"],
  },
  {
    fault: {
      name: "ignore-second-first-message",
      description: "ignores a second invocationStart or resumeAttach on a connection",
      toServer: (m, link) => {
        if (m.type !== "invocationStart" && m.type !== "resumeAttach") return [m];
        if (link.memo.has("first")) return [];
        link.memo.set("first", true);
        return [m];
      },
    },
    caughtBy: ["first-message.second-start", "first-message.resume-after-start"],
  },
  {
    fault: {
      name: "ignore-unknown-channels",
      description: "silently drops client messages on channels that are not announced inputs",
      toClient: (m, link) => {
        announced(m, link);
        return [m];
      },
      toServer: (m, link) => {
        if (m.type === "invocationStart" || m.type === "resumeAttach") return [m];
        const direction = channelsOf(link).get(m.channel);
        return direction === "input" || (m.type === "streamCancel" && direction === "output") ? [m] : [];
      },
    },
    caughtBy: [
      "channels.unknown-channel-item",
      "channels.unknown-channel-end",
      "channels.unknown-channel-cancel",
      "channels.unknown-channel-binary",
      "channels.input-on-output-channel",
    ],
  },
  {
    fault: {
      name: "cancel-after-end-invalid",
      description: "answers a cancel of an input that already ended with invalid-channel",
      toServer: (m, link) => {
        if (m.type === "inputStreamEnd") link.memo.set(`ended-${m.channel}`, true);
        if (m.type === "streamCancel" && link.memo.has(`ended-${m.channel}`)) return violate(link, "invalid-channel");
        return [m];
      },
    },
    caughtBy: ["cancel.cancel-crossing-terminal"],
  },
  {
    fault: {
      name: "evict-slow-reader",
      description: "closes a connection whose reader falls 2 MiB behind",
      toClient: (m, link) => {
        if (link.clientBacklog() > 2 * 1024 * 1024) {
          link.closeClient(1008);
          return [];
        }
        return [m];
      },
    },
    caughtBy: ["backpressure.stalled-reader-blobs"],
  },
  {
    fault: {
      name: "skip-first-replayed-item",
      description: "loses the first output item a resumed attachment should receive",
      toServer: (m, link) => {
        if (m.type === "resumeAttach") link.memo.set("resumed", true);
        return [m];
      },
      toClient: (m, link) => {
        if (m.type !== "outputStreamItem" || !link.memo.has("resumed") || link.memo.has("skipped")) return [m];
        link.memo.set("skipped", true);
        return [];
      },
    },
    caughtBy: ["restart.output-cursor-survives", "resume.cursor-resumes-after-item", "resume.no-cursor-replays-all"],
    restart: true,
  },
  rewrite(
    "wrong-digest",
    "returns a digest with a wrong SHA-256",
    when("invocationResult", (m) => {
      if (m.result.kind !== "value" || m.result.value.kind !== "record") return [m];
      const fields = (m.result.value.value as { fields: { kind: string; value: unknown }[] }).fields;
      const changed = fields.map((f) => (f.kind === "string" ? { ...f, value: `0${(f.value as string).slice(1)}` } : f));
      return [{ ...m, result: { ...m.result, value: { kind: "record", value: { fields: changed } } } } as S];
    }),
    ["methods.digest", "channels.u8-sequence-advances-by-bytes", "channels.u8-identical-resend"],
  ),
  {
    fault: {
      name: "short-idempotency-keys",
      description: "refuses idempotency keys over 512 bytes with limit-exceeded",
      toServer: (m, link) => {
        if (m.type !== "invocationStart" || Buffer.byteLength(m.idempotencyKey) <= 512) return [m];
        link.sendToClient({
          type: "invocationRejected",
          attemptId: m.attemptId,
          code: "limit-exceeded",
          message: "injected",
          retryable: false,
        });
        link.closeClient(1002);
        return [];
      },
    },
    caughtBy: ["limits.idempotency-key-at-limit"],
  },
  {
    fault: { name: "omit-selected-subprotocol", description: "upgrades without selecting any subprotocol", selectProtocol: () => "" },
    caughtBy: ["handshake.selects-subprotocol", "handshake.selects-among-several"],
  },
  {
    fault: {
      name: "lose-resent-input",
      description: "after a resume, loses the input item at sequence 2 (acknowledges around it)",
      toServer: (m, link) => {
        if (m.type === "resumeAttach") link.memo.set("resumed", true);
        return m.type === "inputStreamItem" && m.sequence === 2n && link.memo.has("resumed") ? [] : [m];
      },
    },
    caughtBy: ["resume.suffix-resend", "resume.overlapping-resend"],
  },
  rewrite(
    "shared-output-channel",
    "maps a result's second output stream onto the first one's channel",
    when("invocationResult", (m) => {
      const outputs = m.mappings.filter((x) => x.direction === "output");
      if (outputs.length < 2) return [m];
      return [{ ...m, mappings: m.mappings.map((x) => (x === outputs[1] ? { ...x, channel: outputs[0]!.channel } : x)) }];
    }),
    ["channels.channels-distinct", "methods.split"],
  ),
  {
    fault: {
      name: "resend-after-restart-conflicts",
      description: "treats an identical resend on a later connection as input-conflict (acknowledged input not kept)",
      toServer: (m, link) => {
        if (m.type !== "inputStreamItem") return [m];
        const key = `resent-${m.sequence}-${JSON.stringify(m.value)}`;
        if (link.state.memo.has(key) && !link.memo.has(key)) return violate(link, "input-conflict");
        link.state.memo.set(key, true);
        link.memo.set(key, true);
        return [m];
      },
    },
    caughtBy: ["restart.acknowledged-input-replayed"],
    restart: true,
  },
  {
    fault: {
      name: "fail-instead-of-continuing",
      description:
        "finishes an invocation a restart interrupted as failed instead of continuing it (a server whose methods are not durable, where the suite is told they are)",
      toServer: (m, link) => {
        if (m.type === "resumeAttach") link.memo.set("resumed", true);
        return [m];
      },
      toClient: (m, link) => {
        if (!link.memo.has("resumed")) return [m];
        if (m.type === "outputStreamEnd" && m.outcome.kind === "ok")
          return [{ ...m, outcome: { kind: "cancelled", reason: "invocation-failed" } }];
        if (m.type === "invocationFinished" && m.outcome.kind === "success")
          return [{ ...m, outcome: { kind: "failure", code: "invocation-failed", message: "invocation failed" } }];
        return [m];
      },
    },
    caughtBy: ["restart.output-cursor-survives", "restart.rerun-follows-journal"],
    restart: true,
  },
  {
    // The re-run sends the first item it delivers again as a new item: the client sees it twice.
    fault: rerunAfterRestart(
      "rerun-resends-committed-item",
      "after a restart, the re-run re-sends an item it had committed as a new item (the client sees it twice)",
      (item, index) => (index === 0 ? [item, item] : [item]),
    ),
    caughtBy: ["restart.output-cursor-survives", "restart.input-high-water-survives", "restart.rerun-follows-journal"],
    restart: true,
  },
  {
    // The re-run loses its second item and numbers the rest on without a gap: only the values show it.
    fault: rerunAfterRestart(
      "rerun-skips-item",
      "after a restart, the re-run skips an output item and numbers the following ones on without a gap",
      (item, index) => (index === 1 ? [] : [item]),
    ),
    caughtBy: ["restart.output-cursor-survives", "restart.input-high-water-survives", "restart.rerun-follows-journal"],
    restart: true,
  },
  {
    // The first item the resumed client gets was stored before the restart; the re-run produced the
    // rest, and its step ran again: a fresh result where the journal held one.
    fault: rerunAfterRestart(
      "rerun-calls-step-again",
      "after a restart, the re-run calls a journaled step's function again instead of returning its stored result",
      (item, index) => [
        index === 0
          ? item
          : withJournaled(item, (step, now, random) => [`${step.slice(0, -1)}${step.endsWith("0") ? "1" : "0"}`, now, random]),
      ],
    ),
    caughtBy: ["restart.rerun-follows-journal"],
    restart: true,
  },
  {
    // The same, for ctx.now() and ctx.random(): the re-run reads the clock and randomness afresh.
    fault: rerunAfterRestart(
      "rerun-ignores-journal",
      "after a restart, the re-run returns a fresh ctx.now() and ctx.random() instead of the journaled ones",
      (item, index) => [
        index === 0 ? item : withJournaled(item, (step, now, random) => [step, String(BigInt(now) + 1234n), random === 0.25 ? 0.75 : 0.25]),
      ],
    ),
    caughtBy: ["restart.rerun-follows-journal"],
    restart: true,
  },
  {
    fault: {
      name: "forget-attempts",
      description: "forgets accepted attempts (an exact replay runs as a new attempt)",
      toServer: (m, link) => {
        if (m.type !== "invocationStart") return [m];
        const seen = link.state.memo.get(`attempt-${m.attemptId}`) === true;
        link.state.memo.set(`attempt-${m.attemptId}`, true);
        return seen ? [{ ...m, attemptId: crypto.randomUUID() }] : [m];
      },
    },
    caughtBy: ["restart.acceptance-survives"],
    restart: true,
  },
  rewrite(
    "one-session-token",
    "hands every invocation the first session token it issued",
    when("invocationAccepted", (m, link) => {
      const first = (link.state.memo.get("first-token") as string | undefined) ?? m.sessionToken;
      link.state.memo.set("first-token", first);
      return [{ ...m, sessionToken: first }];
    }),
    ["idempotency.fresh-attempts-independent"],
  ),
];

const BASE_FAULTS: readonly FaultCase[] = [
  // ---- handshake (section 1, decisions section 5) ----
  {
    fault: { name: "accept-any-token", description: "upgrades with a missing, tampered or extended bearer token", acceptAnyToken: true },
    caughtBy: ["handshake.missing-token", "handshake.tampered-token", "handshake.extended-token"],
  },
  {
    fault: {
      name: "select-first-offered",
      description: "selects the first subprotocol the client offers",
      selectProtocol: (offered) => offered[0] ?? "",
    },
    caughtBy: ["handshake.selects-among-several"],
  },
  {
    fault: {
      name: "accept-without-subprotocol",
      description: "upgrades requests that offer no or only unsupported subprotocols",
      acceptAnySubprotocol: true,
    },
    caughtBy: ["handshake.missing-subprotocol", "handshake.unsupported-subprotocol"],
  },
  {
    fault: {
      name: "echo-second-subprotocol",
      description: "answers with a second subprotocol next to the right one",
      selectProtocol: (offered) => (offered.length > 1 ? offered.at(-1)! : (offered[0] ?? "")),
    },
    caughtBy: ["handshake.selects-among-several"],
  },
  {
    fault: { name: "negotiate-compression", description: "negotiates permessage-deflate", compression: true },
    caughtBy: ["handshake.no-compression"],
  },
  {
    fault: {
      name: "wrong-400-envelope",
      description: "a 400 envelope with error instead of errors[]",
      httpError: (status, body) => {
        const parsed = JSON.parse(body) as { code: string; errors?: string[] };
        return status === 400 ? { status, body: JSON.stringify({ code: parsed.code, error: parsed.errors?.[0] ?? "" }) } : { status, body };
      },
    },
    caughtBy: ["handshake.missing-subprotocol", "handshake.unsupported-subprotocol"],
  },
  {
    fault: {
      name: "unauthenticated-as-403",
      description: "answers a bad bearer token with 403",
      httpError: (status, body) => ({ status: status === 401 ? 403 : status, body }),
    },
    caughtBy: ["handshake.missing-token", "handshake.tampered-token"],
  },
  {
    fault: {
      name: "plain-get-404",
      description: "answers a plain GET of the endpoint with 404",
      httpError: (status, body) => ({ status: status === 426 ? 404 : status, body }),
    },
    caughtBy: ["handshake.not-a-websocket"],
  },
  // ---- first message, decoding, codes (sections 1, 2, 6.2, 11) ----
  {
    fault: {
      name: "ignore-undecodable",
      description: "silently ignores client frames that fail strict decoding",
      undecodableToServer: () => [],
    },
    caughtBy: [
      "decoding.trailing-comma",
      "decoding.unknown-top-level-member",
      "decoding.duplicate-top-level-member",
      "decoding.binary-envelope-channel-zero",
    ],
  },
  {
    fault: {
      name: "ignore-premature",
      description: "ignores stream messages sent before acceptance",
      toServer: (m, link) => {
        if (link.memo.get("accepted") === true || m.type === "invocationStart" || m.type === "resumeAttach") {
          link.memo.set("accepted", true);
          return [m];
        }
        return [];
      },
    },
    caughtBy: ["first-message.item-before-acceptance", "first-message.cancel-before-acceptance", "first-message.binary-first"],
  },
  {
    fault: {
      name: "violation-close-1000",
      description: "closes with 1000 instead of 1002 after a protocol violation",
      closeCode: (code) => (code === 1002 ? 1000 : code),
    },
    caughtBy: [
      "channels.input-gap-first",
      "channels.unknown-channel-item",
      "decoding.trailing-comma",
      "schema.item-wrong-kind",
      "channels.end-gap",
      "channels.item-after-end",
      "channels.u8-conflict",
      "schema.text-item-on-binary-stream",
      "schema.binary-item-on-value-stream",
      "first-message.end-before-acceptance",
      "first-message.start-as-binary-frame",
      "first-message.rejection-definitive",
      "resume.conflicting-resend",
      ...DECODING_1002.filter((id) => id !== "decoding.trailing-comma"),
    ],
  },
  rewrite(
    "rejection-without-attempt",
    "drops attemptId from every invocationRejected",
    when("invocationRejected", ({ attemptId: _drop, ...rest }) => [rest]),
    ["channels.input-conflict", "schema.item-wrong-kind", "idempotency.attempt-conflict-parameters"],
  ),
  rewrite(
    "gap-reported-as-conflict",
    "reports input-gap as input-conflict",
    when("invocationRejected", (m) => [m.code === "input-gap" ? { ...m, code: "input-conflict" } : m]),
    ["channels.input-gap-first", "channels.u8-gap", "resume.gap-after-resume"],
  ),
  rewrite(
    "violation-not-retryable",
    "marks invalid-channel, input-gap and input-conflict as not retryable",
    when("invocationRejected", (m) => [{ ...m, retryable: false }]),
    ["channels.unknown-channel-item", "channels.input-conflict", "channels.input-gap-first"],
  ),
  rewrite(
    "rejection-retryable-before-accept",
    "marks pre-acceptance rejections retryable",
    when("invocationRejected", (m) => [{ ...m, retryable: true }]),
    [
      "schema.wrong-kind",
      "idempotency.attempt-conflict-parameters",
      "resume.garbage-session-token",
      "idempotency.idempotency-conflict",
      "idempotency.attempt-conflict-constructor",
      "idempotency.attempt-conflict-live",
      "resume.foreign-cursor",
      "resume.duplicate-cursors",
    ],
  ),
  rewrite(
    "validation-as-invalid-message",
    "answers validation-error as invalid-message",
    when("invocationRejected", (m) => [m.code === "validation-error" ? { ...m, code: "invalid-message" } : m]),
    [
      "schema.wrong-kind",
      "schema.u32-over-range",
      "schema.config-not-declared",
      "schema.u32-negative",
      "schema.u32-fraction",
      "schema.record-too-few",
      "schema.record-too-many",
      "schema.not-a-record",
      "schema.constructor-wrong-kind",
      "schema.constructor-arity",
      "schema.stream-where-scalar",
      "schema.scalar-where-stream",
      "schema.stable-token-at-start",
      "schema.item-record",
    ],
  ),
  rewrite(
    "not-found-as-forbidden",
    "answers not-found as forbidden",
    when("invocationRejected", (m) => [m.code === "not-found" ? { ...m, code: "forbidden" } : m]),
    ["schema.unknown-method", "schema.unknown-application", "schema.unknown-agent-type", "schema.unknown-environment"],
  ),
  rewrite(
    "unsupported-as-validation",
    "answers unsupported-value as validation-error",
    when("invocationRejected", (m) => [m.code === "unsupported-value" ? { ...m, code: "validation-error" } : m]),
    ["schema.host-managed-secret", "schema.future-value"],
  ),
  rewrite(
    "double-rejection",
    "sends invocationRejected twice",
    when("invocationRejected", (m) => [m, m]),
    ["channels.input-gap-first", "first-message.second-start"],
  ),
  // ---- input acknowledgements (sections 6.6, 9) ----
  rewrite(
    "skip-ack",
    "never sends inputStreamAck",
    when("inputStreamAck", () => []),
    ["channels.prompt-ack", "channels.terminal-ack", "channels.u8-ack-counts-bytes", "limits.u8-batch-at-limit"],
  ),
  rewrite(
    "ack-as-index",
    "acknowledges the last zero-based sequence instead of the count",
    when("inputStreamAck", (m) => [
      { ...m, highestContiguousSequence: m.highestContiguousSequence > 0n ? m.highestContiguousSequence - 1n : 0n },
    ]),
    ["channels.prompt-ack", "channels.u8-ack-counts-bytes"],
  ),
  rewrite(
    "ack-ahead",
    "acknowledges one item more than accepted",
    when("inputStreamAck", (m) => [{ ...m, highestContiguousSequence: m.highestContiguousSequence + 1n }]),
    ["channels.prompt-ack", "channels.acks-monotonic", "channels.terminal-ack"],
  ),
  rewrite(
    "terminal-ack-lost",
    "never reports the input terminal in an ACK",
    when("inputStreamAck", (m) => [{ ...m, terminal: false }]),
    ["channels.terminal-ack", "channels.acks-monotonic", "cancel.input-cancelled"],
  ),
  {
    fault: {
      name: "high-water-past-gap",
      description: "acknowledges up to the highest sequence seen, past a gap",
      toServer: (m, link) => {
        if (m.type !== "inputStreamItem") return [m];
        const key = `next-${m.channel}`;
        const next = (link.memo.get(key) as bigint | undefined) ?? 0n;
        if (m.sequence > next)
          link.sendToClient({
            type: "inputStreamAck",
            channel: m.channel,
            highestContiguousSequence: m.sequence + 1n,
            mappings: [],
            terminal: false,
          });
        link.memo.set(key, m.sequence + 1n > next ? m.sequence + 1n : next);
        return [m];
      },
    },
    caughtBy: ["channels.input-gap-later"],
  },
  // ---- output streams and the invocation (sections 6.3-6.5, 6.9, 8) ----
  rewrite(
    "duplicate-output-item",
    "sends every outputStreamItem twice",
    when("outputStreamItem", (m) => [m, m]),
    ["channels.output-order-and-cursors", "channels.result-before-finished", "methods.count"],
  ),
  rewrite(
    "drop-output-item",
    "drops the output item at sequence 1",
    when("outputStreamItem", (m) => (m.sequence === 1n ? [] : [m])),
    ["channels.output-order-and-cursors", "channels.result-before-finished", "methods.reverse"],
  ),
  {
    fault: {
      name: "reorder-output-items",
      description: "swaps output items 0 and 1 of each stream",
      toClient: (m, link) => {
        if (m.type !== "outputStreamItem") return [m];
        const key = `held-${m.channel}`;
        if (m.sequence === 0n) {
          link.memo.set(key, m);
          return [];
        }
        const held = link.memo.get(key) as S | undefined;
        link.memo.delete(key);
        return m.sequence === 1n && held !== undefined ? [m, held] : [m];
      },
    },
    caughtBy: ["channels.output-order-and-cursors", "channels.result-before-finished"],
  },
  rewrite(
    "drop-output-end",
    "drops outputStreamEnd",
    when("outputStreamEnd", () => []),
    ["channels.result-before-finished", "channels.output-order-and-cursors", "methods.fail"],
  ),
  rewrite(
    "end-sequence-off",
    "ends output streams one sequence too far",
    when("outputStreamEnd", (m) => [{ ...m, sequence: m.sequence + 1n }]),
    ["channels.output-order-and-cursors", "channels.producer-error-local"],
  ),
  rewrite(
    "end-without-cursor",
    "omits the cursor of every outputStreamEnd",
    when("outputStreamEnd", ({ cursorToken: _c, ...rest }) => [rest]),
    ["channels.output-order-and-cursors", "resume.terminal-cursor-no-replay", "resume.last-item-cursor-replays-terminal"],
  ),
  rewrite(
    "duplicate-result",
    "sends invocationResult twice",
    when("invocationResult", (m) => [m, m]),
    ["channels.result-before-finished", "methods.count"],
  ),
  rewrite(
    "drop-result",
    "never sends invocationResult",
    when("invocationResult", () => []),
    ["channels.result-before-finished", "resume.result-on-every-attachment"],
  ),
  rewrite(
    "message-after-finished",
    "sends invocationFinished twice",
    when("invocationFinished", (m) => [m, m]),
    ["channels.result-before-finished", "channels.terminal-ack"],
  ),
  {
    fault: {
      name: "finished-close-1001",
      description: "closes with 1001 instead of 1000 after invocationFinished",
      closeCode: (code) => (code === 1000 ? 1001 : code),
    },
    caughtBy: ["channels.result-before-finished", "methods.reverse"],
  },
  rewrite(
    "strip-nested-mappings",
    "announces nested streams nowhere",
    when("outputStreamItem", (m) => [{ ...m, mappings: [] }]),
    ["channels.nested-announced-before-use", "methods.groups"],
  ),
  rewrite(
    "wrong-output-channel",
    "sends output items on an unannounced channel",
    when("outputStreamItem", (m) => [{ ...m, channel: m.channel + 1000 }]),
    ["channels.output-order-and-cursors", "methods.reverse"],
  ),
  rewrite(
    "corrupt-u8-output",
    "flips the first byte of every output-u8 batch",
    when("output-u8", (m) => [{ ...m, payload: Uint8Array.from(m.payload, (b, i) => (i === 0 ? b ^ 1 : b)) }]),
    ["methods.split"],
  ),
  rewrite(
    "corrupt-blob",
    "flips the last byte of every output-binary item",
    when("output-binary", (m) => [{ ...m, payload: Uint8Array.from(m.payload, (b, i) => (i === m.payload.length - 1 ? b ^ 1 : b)) }]),
    ["methods.blobs"],
  ),
  rewrite(
    "unreversed-values",
    "returns reverse's items unreversed",
    when("outputStreamItem", (m) => [
      m.value.kind === "string" ? { ...m, value: { kind: "string", value: [...(m.value.value as string)].reverse().join("") } } : m,
    ]),
    ["methods.reverse", "channels.output-order-and-cursors"],
  ),
  rewrite(
    "drop-every-tenth",
    "drops every tenth output item of long streams (evading backpressure)",
    when("outputStreamItem", (m) => (m.sequence > 100n && m.sequence % 10n === 0n ? [] : [m])),
    ["backpressure.stalled-reader-small-items", "backpressure.input-while-output-stalled"],
  ),
  // ---- acceptance and mappings (sections 4.3, 6.1) ----
  rewrite(
    "drop-provisional-ref",
    "omits provisionalRef from the acceptance's mappings",
    when("invocationAccepted", (m) => [{ ...m, mappings: m.mappings.map(({ provisionalRef: _p, ...rest }) => rest) }]),
    ["first-message.acceptance-echoes-start", "methods.reverse"],
  ),
  rewrite(
    "wrong-initial-high-water",
    "reports an initial input high-water of 1",
    when("invocationAccepted", (m) => [
      {
        ...m,
        mappings: m.mappings.map((x) =>
          x.inputHighWater ? { ...x, inputHighWater: { ...x.inputHighWater, sequence: x.inputHighWater.sequence + 1n } } : x,
        ),
      },
    ]),
    ["first-message.acceptance-echoes-start", "resume.input-high-water"],
  ),
  rewrite(
    "high-water-terminal-lost",
    "reports resumed inputs as not terminal",
    when("invocationAccepted", (m) => [
      {
        ...m,
        mappings: m.mappings.map((x) => (x.inputHighWater ? { ...x, inputHighWater: { ...x.inputHighWater, terminal: false } } : x)),
      },
    ]),
    ["resume.input-high-water-terminal"],
  ),
  rewrite(
    "acceptance-wrong-attempt",
    "answers with a different attemptId",
    when("invocationAccepted", (m) => [{ ...m, attemptId: "00000000-0000-4000-8000-000000000000" }]),
    [
      "first-message.acceptance-echoes-start",
      "idempotency.replay-returns-acceptance",
      "resume.refreshed-session-token",
      "idempotency.replay-semantic-equality",
      "resume.resume-exact-replay",
    ],
  ),
  // ---- resume, takeover, revocation (sections 6.8, 9, 10; decisions section 8) ----
  {
    fault: {
      name: "accept-tampered-session-token",
      description: "resumes with the latest issued session token when the client's is unknown",
      toServer: (m, link) =>
        m.type === "resumeAttach" && !link.state.sessionTokens.has(m.sessionToken) && link.state.lastSessionToken !== undefined
          ? [{ ...m, sessionToken: link.state.lastSessionToken }]
          : [m],
    },
    caughtBy: ["resume.tampered-session-token", "resume.stream-token-as-session", "resume.cursor-as-session"],
  },
  {
    fault: {
      name: "ignore-cursors",
      description: "ignores the client's output cursors",
      toServer: (m) => (m.type === "resumeAttach" ? [{ ...m, outputCursors: [] }] : [m]),
    },
    caughtBy: ["resume.cursor-resumes-after-item", "resume.terminal-cursor-no-replay", "revocation.new-owner-continues"],
  },
  {
    fault: {
      name: "cursor-off-by-one",
      description: "resumes one item before the client's cursor (replays a delivered item)",
      toServer: (m, link) =>
        m.type === "resumeAttach" ? [{ ...m, outputCursors: m.outputCursors.map((c) => link.state.previousCursor.get(c) ?? c) }] : [m],
    },
    caughtBy: ["resume.cursor-resumes-after-item", "revocation.new-owner-continues"],
  },
  rewrite(
    "superseded-as-invalid-token",
    "answers a stale resume with invalid-token",
    when("invocationRejected", (m) => [m.code === "superseded" ? { ...m, code: "invalid-token" } : m]),
    ["resume.stale-resume-superseded", "revocation.revoked-token-superseded"],
  ),
  rewrite(
    "no-revocation",
    "never sends attachmentRevoked",
    when("attachmentRevoked", () => []),
    [
      "revocation.resume-revokes-live",
      "revocation.takeover-revokes-live",
      "idempotency.replay-while-live-revokes",
      "resume.resume-exact-replay",
    ],
  ),
  rewrite(
    "double-revocation",
    "sends attachmentRevoked twice",
    when("attachmentRevoked", (m) => [m, m]),
    ["revocation.resume-revokes-live", "idempotency.replay-while-live-revokes"],
  ),
  {
    fault: {
      name: "session-token-not-refreshed",
      description: "answers a resume with the client's own session token",
      toServer: (m, link) => {
        if (m.type === "resumeAttach") link.memo.set("sent", m.sessionToken);
        return [m];
      },
      toClient: (m, link) =>
        m.type === "invocationAccepted" && link.memo.has("sent") ? [{ ...m, sessionToken: link.memo.get("sent") as string }] : [m],
    },
    caughtBy: ["resume.refreshed-session-token"],
  },
  {
    fault: {
      name: "replay-as-new-attempt",
      description: "treats an exact replay as a new attempt",
      toServer: (m, link) => {
        if (m.type !== "invocationStart") return [m];
        const seen = link.state.memo.get(`attempt-${m.attemptId}`) === true;
        link.state.memo.set(`attempt-${m.attemptId}`, true);
        return seen ? [{ ...m, attemptId: crypto.randomUUID() }] : [m];
      },
    },
    caughtBy: ["idempotency.replay-returns-acceptance", "idempotency.replay-while-live-revokes", "idempotency.attempt-conflict-parameters"],
  },
  rewrite(
    "attempt-conflict-as-idempotency",
    "answers attempt-conflict as idempotency-conflict",
    when("invocationRejected", (m) => [m.code === "attempt-conflict" ? { ...m, code: "idempotency-conflict" } : m]),
    ["idempotency.attempt-conflict-parameters", "idempotency.attempt-conflict-key", "resume.resume-attempt-conflict"],
  ),
  // ---- cancellation (sections 5.5, 6.5; decisions section 8) ----
  {
    fault: {
      name: "ignore-cancel",
      description: "ignores the client's streamCancel",
      toServer: (m) => (m.type === "streamCancel" ? [] : [m]),
    },
    caughtBy: ["cancel.output-cancelled", "cancel.input-cancelled", "cancel.input-source-unavailable"],
  },
  {
    fault: {
      name: "cancel-reason-lost",
      description: "cancels with reason cancelled whatever the client said",
      toServer: (m) => (m.type === "streamCancel" ? [{ ...m, reason: "cancelled" }] : [m]),
    },
    caughtBy: ["cancel.output-consumer-drop", "cancel.output-source-unavailable"],
  },
  rewrite(
    "cancelled-end-as-ok",
    "ends a cancelled output with outcome ok",
    when("outputStreamEnd", (m) => [m.outcome.kind === "cancelled" ? { ...m, outcome: { kind: "ok" } } : m]),
    ["cancel.output-cancelled", "cancel.output-consumer-drop"],
  ),
  // ---- limits (sections 11, 12) ----
  {
    fault: {
      name: "oversize-close-1000",
      description: "closes oversized messages with 1000 instead of 1009",
      closeCode: (code) => (code === 1009 ? 1000 : code),
    },
    caughtBy: ["limits.binary-message-too-large", "limits.text-message-too-large-after-acceptance", ...DECODING_LIMITS],
  },

  rewrite(
    "limit-as-invalid-message",
    "answers limit-exceeded as invalid-message",
    when("invocationRejected", (m) => [m.code === "limit-exceeded" ? { ...m, code: "invalid-message" } : m]),
    ["limits.limit-code-not-retryable", ...DECODING_LIMITS.filter((id) => id !== "decoding.too-deep" && id !== "decoding.text-too-large")],
  ),
  // ---- restart durability (sections 6.1, 9) ----
  {
    fault: {
      name: "ack-before-commit",
      description: "acknowledges input items at once and commits them 3 s later (lost if the server restarts meanwhile)",
      toServer: (m, link) => {
        if (m.type !== "inputStreamItem") return [m];
        link.sendToClient({
          type: "inputStreamAck",
          channel: m.channel,
          highestContiguousSequence: m.sequence + 1n,
          mappings: [],
          terminal: false,
        });
        setTimeout(() => link.sendToServer(m), 3000).unref();
        return [];
      },
    },
    caughtBy: ["restart.input-high-water-survives"],
    restart: true,
  },
];

/** Faults of what a server may set or not enforce: the first-message deadline, pings, per-principal bounds. */
export const BOUNDED_FAULTS: readonly FaultCase[] = [
  // ---- the first-message deadline ----
  {
    fault: {
      name: "silent-connection-kept",
      description: "keeps a connection that sent nothing open past the first-message deadline",
      keepSilentClientsOpen: true,
    },
    caughtBy: ["liveness.first-message-deadline"],
    bounded: true,
  },
  {
    fault: {
      name: "silent-connection-closed-at-once",
      description: "closes every connection 1002 right after the upgrade, long before the first-message deadline",
      onLinked: (link) => link.closeClient(1002),
    },
    caughtBy: ["liveness.first-message-deadline"],
    bounded: true,
  },
  {
    fault: {
      name: "first-message-close-1000",
      description: "closes a connection that sent nothing with 1000 instead of 1002",
      closeCode: (code, link) => (code === 1002 && !link.clientSpoke() ? 1000 : code),
    },
    caughtBy: ["liveness.first-message-deadline"],
    bounded: true,
  },
  // ---- pings ----
  {
    fault: {
      name: "pongs-dropped",
      description: "drops the client's pongs: a client that answers every ping is dropped as silent",
      dropPongs: true,
    },
    caughtBy: ["liveness.ping-answered-stays"],
    bounded: true,
  },
  {
    fault: {
      name: "pings-not-sent",
      description: "sends the client no ping (answering the server's itself): a peer that is gone is never found",
      answerPings: true,
    },
    caughtBy: ["liveness.ping-answered-stays", "liveness.ping-unanswered-dropped"],
    bounded: true,
  },
  // ---- per-principal bounds ----
  {
    fault: {
      name: "principal-bound-as-limit-exceeded",
      description: "refuses a principal over its bound with limit-exceeded instead of overloaded (upgrade and start)",
      toClient: when("invocationRejected", (m) => [m.code === "overloaded" ? { ...m, code: "limit-exceeded" } : m]),
      httpError: (status, body) => {
        const envelope = JSON.parse(body) as { code?: string };
        return { status, body: envelope.code === "overloaded" ? JSON.stringify({ ...envelope, code: "limit-exceeded" }) : body };
      },
    },
    caughtBy: ["limits.principal-connections-overloaded", "limits.principal-sessions-overloaded"],
    bounded: true,
  },
  {
    ...rewrite(
      "principal-bound-not-retryable",
      "refuses a start over its principal's bound as not retryable",
      when("invocationRejected", (m) => [m.code === "overloaded" ? { ...m, retryable: false } : m]),
      ["limits.principal-sessions-overloaded"],
    ),
    bounded: true,
  },
  {
    fault: {
      name: "principal-connections-unbounded",
      description: "accepts a principal's upgrade over its connection bound",
      acceptRefusedUpgrades: true,
    },
    caughtBy: ["limits.principal-connections-overloaded"],
    bounded: true,
  },
];

/** The checks of another principal's attach (`otherPrincipalToken`). */
const AUTHORIZATION_CHECKS = [
  "authorization.other-principal-resume",
  "authorization.other-principal-takeover",
  "authorization.other-principal-resume-replay",
  "authorization.other-principal-start-replay",
  "authorization.other-principal-cursor",
];

/** Faults of a server that lets one principal act on another's sessions, or refuses it the wrong way. */
export const AUTHORIZATION_FAULTS: readonly FaultCase[] = [
  {
    fault: {
      name: "principals-confused",
      description:
        "takes the second principal for the first (as a server that checks no principal on resume, takeover or replay lets it act on the first's sessions)",
      authorization: (header) => (header === `Bearer ${OTHER_PRINCIPAL_TOKEN}` ? `Bearer ${TOKEN}` : header),
    },
    caughtBy: AUTHORIZATION_CHECKS,
  },
  rewrite(
    "identity-refusal-retryable",
    "refuses an attach or replay of another principal's session as retryable",
    when("invocationRejected", (m) => [m.code === "invalid-token" || m.code === "forbidden" ? { ...m, retryable: true } : m]),
    AUTHORIZATION_CHECKS,
  ),
  rewrite(
    "identity-refusal-not-found",
    "refuses an attach or replay of another principal's session with not-found instead of invalid-token or forbidden",
    when("invocationRejected", (m) => [m.code === "invalid-token" || m.code === "forbidden" ? { ...m, code: "not-found" } : m]),
    AUTHORIZATION_CHECKS,
  ),
];

export const FAULTS: readonly FaultCase[] = [...BASE_FAULTS, ...MORE_FAULTS, ...BOUNDED_FAULTS, ...AUTHORIZATION_FAULTS];

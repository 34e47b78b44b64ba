/** What several scenarios share: the demo methods they start, a gate a script waits at until the scenario opens it, and the steps most scripts take. */
import { randomUUID } from "node:crypto";
import { echoContract } from "@golem-stream/contract/demo";
import type { SchemaGraphJson, ServerMessage, StreamMapping } from "@golem-stream/wire";
import { ensureEqual } from "../../check.js";
import type { AdapterProcess } from "../adapter-process.js";
import type { ClientContext, StartSpec } from "../context.js";
import type { Script, ScriptedPeer, ScriptedServer } from "../scripted-server.js";
import type { ScriptTokens } from "../script-tokens.js";
import { FINISHED, ScriptedSession, nextAttach, type Attach, type ScriptedOutput } from "../session-script.js";

/** `count(to, delayMs)`: one output `stream<u32>` (the scripts decide what it carries). */
export const COUNT = {
  method: "count",
  methodParameters: {
    kind: "record",
    value: {
      fields: [
        { kind: "u32", value: 15 },
        { kind: "u32", value: 0 },
      ],
    },
  },
} as const;

/** `split(data: stream<u8>)`: result `record{upper: stream<u8>, lines: stream<string>}`. */
export const SPLIT = {
  method: "split",
  methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { input: "data", element: "u8" } }] } },
} as const;

/** `reverse(input: stream<string>)`: one input stream, fed by the scenario, and one output. */
export const REVERSE = {
  method: "reverse",
  methodParameters: { kind: "record", value: { fields: [{ kind: "stream", value: { input: "in", element: "value" } }] } },
} as const;

export const str = (value: string) => ({ kind: "string", value }) as const;

export interface Gate {
  readonly opened: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Asks the adapter for `count` items of stream 0 and waits until they were delivered. */
export async function deliver(ctx: ClientContext, count: number): Promise<void> {
  const before = ctx.adapter.events.filter((e) => e.type === "readDone").length;
  ctx.adapter.send({ type: "read", stream: 0, count });
  await ctx.adapter.waitFor(() => ctx.adapter.events.filter((e) => e.type === "readDone").length > before, `delivery of ${count} item(s)`);
}

/** Waits until `adapter` reported the end of output stream 0 (its items are all reported by then). */
export async function endOfStream(adapter: AdapterProcess): Promise<void> {
  await adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 0, "the end of output stream 0");
}

/** Reads stream 0 to its end and fails unless the application saw 0, 1, …, n-1 exactly once, in order. */
export async function expectAllOnce(ctx: ClientContext, n: number): Promise<void> {
  ctx.adapter.send({ type: "read", stream: 0 });
  await ctx.finishedOk();
  await ctx.adapter.waitFor((e) => e.type === "streamEnd" && e.stream === 0, "the end of output stream 0");
  ensureEqual(
    ctx.numbers(0),
    Array.from({ length: n }, (_, i) => i),
    "items the application received",
  );
}

/** The result graph the demo catalogue gives `method`. */
export function resultGraphOf(method: string): SchemaGraphJson {
  const graph = echoContract.graphs.methods.find((m) => m.name === method)?.result;
  if (graph === undefined) throw new Error(`the demo catalogue has no result graph for ${method}`);
  return graph;
}

/** Bytes `from`, `from + 1`, … `to - 1`, and their hex. */
export const bytes = (from: number, to: number): Uint8Array => Uint8Array.from({ length: to - from }, (_, i) => from + i);
export const hex = (from: number, to: number): string => Buffer.from(bytes(from, to)).toString("hex");

/** An output stream whose messages a script builds by hand (bytes, blobs, records): its id and the token issued for it. */
export function outputStream(tokens: ScriptTokens): { readonly id: string; readonly token: string } {
  const id = randomUUID();
  return { id, token: tokens.stream(id, "output") };
}

/** The ok end of output stream `id` on `channel` at sequence `at`, with its terminal cursor. */
export function okEnd(tokens: ScriptTokens, id: string, channel: number, at: number): ServerMessage {
  return {
    type: "outputStreamEnd",
    channel,
    cursorToken: tokens.cursor(id, BigInt(at), "terminal"),
    outcome: { kind: "ok" },
    sequence: BigInt(at),
  };
}

/** The packed u8 batch of bytes `from` … `to - 1` of stream `id`, its cursor naming the batch's final byte. */
export function u8Batch(tokens: ScriptTokens, id: string, channel: number, from: number, to: number): ServerMessage {
  return {
    type: "output-u8",
    channel,
    sequence: BigInt(from),
    cursorToken: tokens.cursor(id, BigInt(to - 1), "item"),
    payload: bytes(from, to),
  };
}

/** The result of `split`: record{upper, lines} of the two stream tokens, with `mappings` announcing any of them. */
export function splitResult(upperToken: string, linesToken: string, mappings: readonly StreamMapping[] = []): ServerMessage {
  return {
    type: "invocationResult",
    mappings: [...mappings],
    result: {
      kind: "value",
      graph: resultGraphOf("split"),
      value: {
        kind: "record",
        value: {
          fields: [
            { kind: "stream", value: { streamToken: upperToken } },
            { kind: "stream", value: { streamToken: linesToken } },
          ],
        },
      },
    },
  };
}

/** Bytes the application received on output stream `stream`, as one hex string. */
export function receivedHex(ctx: ClientContext, stream: number): string {
  return ctx.adapter.events
    .flatMap((e) => (e.type === "item" && e.stream === stream && e.bytesHex !== undefined ? [e.bytesHex] : []))
    .join("");
}

/** Accepts `attach` and sends the result that announces `out` on channel 1: how a script answers a start. */
export function acceptWithResult(peer: ScriptedPeer, attach: Attach, session: ScriptedSession, out: ScriptedOutput): void {
  session.accept(peer, attach);
  peer.send(out.result(1));
}

/** Sends the items `from` ≤ n < `total` of `out` on `channel`, then its ok end at `total`. */
export function sendToEnd(peer: ScriptedPeer, out: ScriptedOutput, channel: number, from: number, total: number): void {
  out.send(peer, channel, from, total);
  peer.send(out.end(channel, total));
}

/**
 * Begins `start` (default `count`) with a script that accepts every
 * connection with the result announcing one output on channel 1, then lets
 * `serve` go on with the connection.
 */
export async function beginAccepted(
  ctx: ClientContext,
  serve: (peer: ScriptedPeer, out: ScriptedOutput) => Promise<void> | void,
  start: StartSpec = COUNT,
  refuse?: Parameters<ScriptedServer["refuseUpgrades"]>[0],
): Promise<void> {
  const session = new ScriptedSession(ctx.tokens);
  const out = session.output();
  await ctx.begin(
    async (peer) => {
      acceptWithResult(peer, await nextAttach(peer), session, out);
      await serve(peer, out);
    },
    start,
    refuse,
  );
}

/** Ends the invocation with an empty output announced on `channel`, then success: for scripts to which what the method returns is no concern. */
export function finishWithEmptyOutput(peer: ScriptedPeer, out: ScriptedOutput, channel: number): void {
  peer.send(out.result(channel));
  peer.send(out.end(channel, 0));
  peer.send(FINISHED);
}

/** Items of the `count` a `planned` script serves. */
export const PLANNED_ITEMS = 3;

/**
 * Serves connection by connection: `plan[i]` says what connection i+1 does
 * with its first message — `cut` before answering, `stall` (never answer),
 * `accept-cut` (accept, send one item, vanish), or `complete` the invocation.
 * Connections past the plan do what its last step says.
 */
export function planned(
  session: ScriptedSession,
  plan: readonly ("cut" | "stall" | "accept-cut" | "complete")[],
  attaches: Attach[] = [],
): Script {
  const out = session.output();
  return async (peer) => {
    const attach = await nextAttach(peer);
    attaches.push(attach);
    const step = plan[Math.min(peer.index, plan.length) - 1]!;
    if (step === "cut") return peer.cut();
    if (step === "stall") return;
    const resumed = attach.type === "resumeAttach";
    session.accept(peer, attach, resumed ? [out.mapping(1)] : []);
    peer.send(out.result(1, resumed));
    const from = resumed ? out.resumeFrom(attach) : 0;
    if (step === "accept-cut") {
      if (from === 0) peer.send(out.item(1, 0));
      // Let the client see the item before the connection goes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return peer.cut();
    }
    if (from !== "ended") out.send(peer, 1, from, PLANNED_ITEMS);
    peer.send(out.end(1, PLANNED_ITEMS));
    peer.send(FINISHED);
  };
}

/**
 * Hands an input stream's committed items from the store to the agent's
 * queue, from `stream.fed` up to `stream.count`, in order, as the queue makes
 * room; then ends the queue as the stream's terminal says. Used by the owner
 * for items it has not had from its own attachment: in a cluster, items
 * another node's attachment committed (cluster-follower.ts); on a re-run of a
 * replayable method, every item from sequence 0 (docs/durable-execution.md).
 */
import type { SchemaValueJson } from "@golem-stream/wire";
import type { InputChunk, SessionStore } from "../store/session-store.js";
import { substituteStreamRefs } from "../values.js";
import { itemFrom, type InputItem, type StreamState } from "./stream-state.js";

export interface FeedHost {
  readonly store: SessionStore;
  /** Charges the bytes of an item handed to the queue to the session's budget (the queue releases them). */
  charge(bytes: number): void;
  /** The agent has had every item below `fed` (cluster: the attachment's node may accept more). */
  consumed?(fed: bigint): void;
  /** The streams item `sequence` of stream `streamId` introduced (registered before the feed reads the item). */
  childrenOf(streamId: string, sequence: bigint): readonly StreamState[];
}

/**
 * Items read from the store at once, by element kind: the feed of a long
 * log (a re-run reads a whole upload again) holds at most this much beyond
 * what the queue holds. A `u8` item is a byte; a binary item is up to 16 MiB,
 * a value up to a text message.
 */
const READ_ITEMS: Readonly<Record<StreamState["elementKind"], bigint>> = { u8: 4n * 1024n * 1024n, binary: 4n, value: 64n };

/** Feeds `stream` (once at a time: a call while it feeds returns at once); rejects on a store failure. */
export async function feedInput(stream: StreamState, host: FeedHost): Promise<void> {
  if (stream.feeding) return;
  stream.feeding = true;
  /** The commits last waited for when the store had nothing beyond `fed`. */
  let waitedFor: Promise<void> | undefined;
  try {
    for (;;) {
      const queue = stream.queue;
      if (queue === undefined || queue.closed) return;
      if (stream.fed >= stream.count) {
        const terminal = stream.inputTerminal;
        if (terminal === undefined) return;
        if (terminal.kind === "end" || terminal.reason === "consumer-drop") queue.end();
        else queue.cancel(terminal.reason);
        return;
      }
      await queue.waitForSpace();
      const to = stream.fed + READ_ITEMS[stream.elementKind];
      const chunks = await host.store.readInput(stream.streamId, stream.fed, to < stream.count ? to : stream.count);
      if (chunks.length === 0) {
        // The count runs ahead of the store: chunks this node accepted while
        // the feed was behind are still being committed. Wait for their
        // commits and read again; if the store still has nothing after every
        // commit begun so far, stop (the next accept or sync feeds again).
        const pending = stream.inputCommitted;
        if (pending === waitedFor) return;
        waitedFor = pending;
        await pending;
        continue;
      }
      for (const chunk of chunks) {
        await queue.waitForSpace();
        if (queue.closed) return;
        // Packed bytes may have been committed in other batches than the agent was fed: only the unfed suffix.
        // (Read after the wait: nothing else hands this stream's items on while the feed is behind.)
        if (chunk.sequence > stream.fed) break;
        const item =
          chunk.sequence + chunk.itemCount <= stream.fed
            ? undefined
            : itemFrom(inputItemOf(stream, chunk, host), chunk.sequence, stream.fed);
        if (item === undefined) continue;
        const bytes = item.kind === "bytes" ? item.bytes.length : chunk.data.length;
        host.charge(bytes);
        queue.push(item, bytes);
        stream.fed = chunk.sequence + chunk.itemCount;
        host.consumed?.(stream.fed);
      }
    }
  } finally {
    stream.feeding = false;
  }
}

/** A stored chunk as the agent reads it. */
function inputItemOf(stream: StreamState, chunk: InputChunk, host: FeedHost): InputItem {
  switch (stream.elementKind) {
    case "u8":
      return { kind: "bytes", bytes: chunk.data };
    case "binary":
      return { kind: "blob", blob: chunk.mimeType === undefined ? { bytes: chunk.data } : { bytes: chunk.data, mimeType: chunk.mimeType } };
    case "value": {
      const value = JSON.parse(new TextDecoder().decode(chunk.data)) as SchemaValueJson;
      // The log keeps an item as the client sent it, the streams it introduces named by the
      // client's provisional references (a resend is compared with it byte for byte); the agent
      // reads them by their tokens, as the live path hands it the item (attachment-input.ts).
      const children = host.childrenOf(stream.streamId, chunk.sequence);
      if (children.length === 0) return { kind: "value", value };
      const tokens = new Map(children.map((child) => [child.provisionalRef ?? "", child.token]));
      return { kind: "value", value: substituteStreamRefs(value, tokens) };
    }
  }
}

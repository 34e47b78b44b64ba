/**
 * Whether a value the agent produced can travel in the message that will
 * carry it. A value within the 8 MiB byte charge can still make a message
 * over the 8 MiB text limit once its envelope (cursor token, channel,
 * sequence, mappings) is added; such an event, once committed, could never
 * be sent, and every attachment would fail on it forever. So the
 * check runs before the commit, with the envelope at its largest: any
 * channel number, any sequence, a cursor token of the protocol's maximum
 * length (minted per attachment, for whoever attaches). Mappings are counted
 * with the stream tokens they will carry, which are minted before this check.
 *
 * Pure arithmetic over canonical JSON: the value is sent as the canonical
 * text the store holds, so its size is known exactly.
 */
import { canonicalJson, LIMITS, type JsonValue } from "@golem-stream/wire";
import type { ElementKind, OutputEvent } from "../store/session-store.js";

const WIDEST_CHANNEL = 4294967295;
const WIDEST_SEQUENCE = "18446744073709551615";
const WIDEST_TOKEN = "x".repeat(LIMITS.maxTokenBytes);

/** A placeholder whose canonical text is one byte, standing for the value. */
const VALUE_SLOT = 0;

let itemEnvelope: number | undefined;
let resultEnvelope: number | undefined;

/** Bytes of an `outputStreamItem` other than its value and mappings. */
function outputItemEnvelope(): number {
  itemEnvelope ??=
    canonicalJson({
      channel: WIDEST_CHANNEL,
      cursorToken: WIDEST_TOKEN,
      mappings: [],
      sequence: WIDEST_SEQUENCE,
      type: "outputStreamItem",
      value: VALUE_SLOT,
      version: 1,
    }).length - 1;
  return itemEnvelope;
}

/** Bytes of an `invocationResult` other than its result body and mappings. */
function invocationResultEnvelope(): number {
  resultEnvelope ??= canonicalJson({ mappings: [], result: VALUE_SLOT, type: "invocationResult", version: 1 }).length - 1;
  return resultEnvelope;
}

/** Bytes the mappings of new output streams add to the message that announces them. */
function outputMappingsBytes(streamTokens: readonly string[]): number {
  let total = 0;
  for (const streamToken of streamTokens) {
    const mapping: JsonValue = { channel: WIDEST_CHANNEL, direction: "output", streamToken };
    total += canonicalJson(mapping).length;
  }
  // The commas between them: exact, so the rule refuses nothing that fits (the property test is tight).
  return total + Math.max(0, streamTokens.length - 1);
}

/** Whether an output item of `valueBytes` (canonical UTF-8) announcing these streams fits one text message. */
export function outputItemFits(valueBytes: number, streamTokens: readonly string[]): boolean {
  return outputItemEnvelope() + valueBytes + outputMappingsBytes(streamTokens) <= LIMITS.maxTextMessageBytes;
}

/** Whether an `invocationResult` whose body is `bodyBytes` (canonical UTF-8) announcing these streams fits. */
export function invocationResultFits(bodyBytes: number, streamTokens: readonly string[]): boolean {
  return invocationResultEnvelope() + bodyBytes + outputMappingsBytes(streamTokens) <= LIMITS.maxTextMessageBytes;
}

/** The message of the `producer-error` that ends a stream whose next item cannot be sent. */
export const ITEM_TOO_LARGE = "an output item does not fit in one 8 MiB message";

const UNSENDABLE_ITEM_OUTCOME = canonicalJson({ kind: "error", code: "producer-error", message: ITEM_TOO_LARGE });

/**
 * How an attachment reads one logged output event. Producers can no longer
 * commit an item that does not fit its message, but a log written before
 * that check may hold one: it reads as the terminal the producer gets today
 * (`producer-error` at that sequence), and nothing after it in the stream is
 * read. Output pumps and cursor verification both read through this, so a
 * client's cursor on that terminal verifies and resuming from it replays
 * nothing more.
 */
export function asSendable(event: OutputEvent, elementKind: ElementKind, childTokens: readonly string[]): OutputEvent {
  if (event.event !== "item" || elementKind !== "value" || outputItemFits(event.data.length, childTokens)) return event;
  return { event: "terminal", streamId: event.streamId, sequence: event.sequence, outcome: UNSENDABLE_ITEM_OUTCOME };
}

/**
 * Mapping bytes a session's streams may add up to. An acceptance lists a
 * mapping for every input stream and every output stream with unseen events,
 * so it must hold all of a session's mappings at once beside its widest
 * envelope (a session token of 8192 bytes, an idempotency key of 1 KiB at six
 * bytes per escaped byte). Every other message that announces streams
 * (result, item, ACK) announces a subset. With this server's stream tokens of
 * a few hundred bytes the 4096-stream limit is reached long before this; it
 * binds only when an authenticator's principals make tokens kilobytes long.
 */
export const MAX_SESSION_MAPPING_BYTES =
  LIMITS.maxTextMessageBytes -
  canonicalJson({
    attemptId: "00000000-0000-4000-8000-000000000000",
    idempotencyKey: "x".repeat(6 * 1024),
    mappings: [],
    sessionToken: WIDEST_TOKEN,
    type: "invocationAccepted",
    version: 1,
  }).length;

/** The widest mapping a stream can have in any message (an input's carries its high-water and reference). */
export function widestMappingBytes(direction: "input" | "output", streamToken: string): number {
  const mapping: Record<string, JsonValue> = { channel: WIDEST_CHANNEL, direction, streamToken };
  if (direction === "input") {
    mapping["inputHighWater"] = { sequence: WIDEST_SEQUENCE, terminal: false };
    mapping["provisionalRef"] = "00000000-0000-4000-8000-000000000000";
  }
  return canonicalJson(mapping).length + 1;
}

/**
 * The connection-local channel table (protocol section 8): installing the
 * server's mappings before anything may use their channels, and looking a
 * channel up for a message that names it. A channel mapped twice, a stream
 * mapped twice (decisions §8: a stream is announced once per connection), a
 * channel unknown, or of the wrong direction is `invalid-channel` (protocol
 * 8); a binary message of the wrong kind for its stream is a `protocol-error`.
 */
import type { ClientCancelReason, StreamMapping } from "@golem-stream/wire";
import type { Attachment, ChannelEntry } from "./attachment.js";
import { invalidChannel, violation } from "./errors.js";
import { senderFor } from "./item-encoding.js";
import type { InputFeeder } from "./input-feeder.js";
import type { InputRegistry, MappingSource } from "./input-registry.js";
import type { OutputRegistry } from "./output-registry.js";
import type { OutputStream } from "./output-stream.js";

export type { MappingSource } from "./input-registry.js";

/**
 * Installs `mappings` on the attachment. An input whose source is not in this
 * process is cancelled at once with `sourcelessReason`: `source-unavailable`,
 * or `cancelled` while the whole invocation is being cancelled. Returns
 * whether such an input was still open on the server (the cancel ends it).
 */
export function installMappings(
  attachment: Attachment,
  mappings: readonly StreamMapping[],
  source: MappingSource,
  inputs: InputRegistry,
  outputs: OutputRegistry,
  sourcelessReason: ClientCancelReason = "source-unavailable",
): boolean {
  let cancelledOpenInput = false;
  for (const mapping of mappings) {
    if (attachment.channels.has(mapping.channel)) throw invalidChannel(`channel ${mapping.channel} mapped twice`);
    if (mapping.direction === "output") installOutput(attachment, mapping, outputs);
    else if (installInput(attachment, mapping, source, inputs, sourcelessReason)) cancelledOpenInput = true;
  }
  return cancelledOpenInput;
}

/** Returns whether the input has no source here and was open on the server: it was cancelled. */
function installInput(
  attachment: Attachment,
  mapping: StreamMapping,
  source: MappingSource,
  inputs: InputRegistry,
  sourcelessReason: ClientCancelReason,
): boolean {
  const highWater = mapping.inputHighWater ?? { sequence: 0n, terminal: false };
  const resolved = inputs.resolve(mapping, source);
  const connection = attachment.connection;
  if (resolved.kind === "sourceless") {
    attachment.channels.set(mapping.channel, { direction: "input", feeder: undefined });
    // An input of a session (or frozen start) taken over from another process: its source
    // is gone (protocol 13).
    if (highWater.terminal) return false;
    connection?.send({ type: "streamCancel", channel: mapping.channel, reason: sourcelessReason });
    return true;
  }
  const { feeder } = resolved;
  // Mapped again, the feeder would be attached again and resend its whole unacknowledged window
  // on the new channel: each such ACK (a few hundred bytes) queued up to 8 MiB of frames.
  if (attachment.channelOf.has(feeder)) throw invalidChannel(`input stream mapped twice on one connection (channel ${mapping.channel})`);
  attachment.channels.set(mapping.channel, { direction: "input", feeder });
  attachment.channelOf.set(feeder, mapping.channel);
  if (connection === undefined) return false;
  const congested = connection.congested?.bind(connection);
  feeder.attach({ channel: mapping.channel, send: senderFor(connection), ...(congested === undefined ? {} : { congested }) }, highWater);
  return false;
}

function installOutput(attachment: Attachment, mapping: StreamMapping, outputs: OutputRegistry): void {
  const stream = outputs.streamFor(mapping.streamToken);
  // Each mapping is an entry of this connection's table: mapped again and again (by replayed
  // items, dropped without being charged), the table grew without bound.
  if (attachment.channelOf.has(stream)) throw invalidChannel(`output stream mapped twice on one connection (channel ${mapping.channel})`);
  attachment.channels.set(mapping.channel, { direction: "output", stream, next: undefined, ended: false });
  attachment.channelOf.set(stream, mapping.channel);
}

function outputEntry(attachment: Attachment, channel: number): ChannelEntry & { direction: "output" } {
  const entry = attachment.channels.get(channel);
  if (entry?.direction !== "output") throw invalidChannel(`output message on channel ${channel}, which is not a mapped output`);
  return entry;
}

/**
 * The output stream an item (or packed batch of `count` items) at `sequence` names. On one
 * connection a stream's items follow one another and then its one terminal (protocol 8); replays
 * of what this process already has come only on a new connection, where the stream drops them.
 */
export function outputItemOn(attachment: Attachment, channel: number, sequence: bigint, count: bigint): OutputStream {
  const entry = outputEntry(attachment, channel);
  if (entry.ended) throw violation(`an output item on channel ${channel} after its stream's terminal on this connection`);
  if (entry.next !== undefined && sequence !== entry.next) {
    throw violation(
      `output item at sequence ${sequence} on channel ${channel}; the one before it on this connection ended at ${entry.next}`,
    );
  }
  entry.next = sequence + count;
  return entry.stream;
}

/** The output stream a binary message names: legal only on a stream whose element type is that direct-binary kind. */
export function outputOfKind(
  attachment: Attachment,
  channel: number,
  kind: "u8" | "binary",
  sequence: bigint,
  count: bigint,
): OutputStream {
  const stream = outputItemOn(attachment, channel, sequence, count);
  const schema = stream.schema;
  if (schema !== undefined && schema.direct !== kind)
    throw violation(`an output-${kind} message on a stream whose elements are not ${kind}`);
  return stream;
}

/** The output stream an `outputStreamEnd` names: one terminal per stream on one connection. */
export function outputEndOn(attachment: Attachment, channel: number): OutputStream {
  const entry = outputEntry(attachment, channel);
  if (entry.ended) throw violation(`a second outputStreamEnd on channel ${channel} on this connection`);
  entry.ended = true;
  return entry.stream;
}

/** The input an `inputStreamAck` names (`undefined`: an input whose source is not in this process). */
export function inputOn(attachment: Attachment, channel: number): InputFeeder | undefined {
  const entry = attachment.channels.get(channel);
  if (entry?.direction !== "input") throw invalidChannel(`inputStreamAck on channel ${channel}, not an input`);
  return entry.feeder;
}

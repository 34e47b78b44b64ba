/**
 * Rules every server-to-client message log must satisfy, whatever the method
 * (protocol sections 6 and 8): announce before use, contiguous sequences from
 * the announced start, exactly one terminal per stream, result before
 * finished, nothing after finished or attachmentRevoked.
 */
import type { ServerMessage, StreamMapping } from "@golem-stream/wire";

export interface TraceOptions {
  /** First expected output sequence per channel (a resume may start later); default 0. */
  readonly outputStart?: ReadonlyMap<number, bigint>;
}

function channelOf(message: ServerMessage): number | undefined {
  return "channel" in message ? message.channel : undefined;
}

function mappingsOf(message: ServerMessage): readonly StreamMapping[] {
  return "mappings" in message ? message.mappings : [];
}

function itemCount(message: ServerMessage): bigint {
  if (message.type === "output-u8") return BigInt(message.payload.length);
  return 1n;
}

/** Returns the violations found in `messages` (empty when the log conforms). */
export function traceViolations(messages: readonly ServerMessage[], options: TraceOptions = {}): string[] {
  const problems: string[] = [];
  const channels = new Map<number, StreamMapping>();
  const nextSequence = new Map<number, bigint>();
  const ended = new Set<number>();
  let resultSeen = false;
  let finished = false;
  let revoked = false;
  messages.forEach((message, index) => {
    const at = `message ${index} (${message.type})`;
    if (finished) problems.push(`${at} follows invocationFinished`);
    if (revoked) problems.push(`${at} follows attachmentRevoked`);
    // A message may use a channel it announces itself only for nested streams inside its value, never its own channel.
    const channel = channelOf(message);
    if (channel !== undefined && message.type !== "invocationAccepted") {
      const mapping = channels.get(channel);
      if (mapping === undefined) problems.push(`${at} uses channel ${channel} before any mapping announced it`);
      else {
        const outbound =
          message.type === "outputStreamItem" ||
          message.type === "outputStreamEnd" ||
          message.type === "output-u8" ||
          message.type === "output-binary";
        if (outbound && mapping.direction !== "output") problems.push(`${at} sends output on input channel ${channel}`);
        if (message.type === "inputStreamAck" && mapping.direction !== "input")
          problems.push(`${at} acknowledges output channel ${channel}`);
      }
    }
    for (const mapping of mappingsOf(message)) {
      const existing = channels.get(mapping.channel);
      if (existing !== undefined && existing.streamToken !== mapping.streamToken) {
        problems.push(`${at} rebinds channel ${mapping.channel} to another stream`);
      }
      if (mapping.direction === "input" && mapping.inputHighWater === undefined)
        problems.push(`${at} maps input channel ${mapping.channel} without inputHighWater`);
      if (mapping.direction === "output" && mapping.inputHighWater !== undefined)
        problems.push(`${at} maps output channel ${mapping.channel} with inputHighWater`);
      channels.set(mapping.channel, mapping);
    }
    switch (message.type) {
      case "outputStreamItem":
      case "output-u8":
      case "output-binary": {
        const c = message.channel;
        if (ended.has(c)) problems.push(`${at} on channel ${c} after its terminal`);
        const expected = nextSequence.get(c) ?? options.outputStart?.get(c) ?? 0n;
        if (message.sequence !== expected) problems.push(`${at} on channel ${c} has sequence ${message.sequence}, expected ${expected}`);
        nextSequence.set(c, message.sequence + itemCount(message));
        break;
      }
      case "outputStreamEnd": {
        const c = message.channel;
        if (ended.has(c)) problems.push(`${at}: a second terminal on channel ${c}`);
        ended.add(c);
        const expected = nextSequence.get(c) ?? options.outputStart?.get(c);
        if (expected !== undefined && message.sequence !== expected)
          problems.push(`${at} on channel ${c} ends at sequence ${message.sequence}, expected ${expected}`);
        break;
      }
      case "invocationResult":
        if (resultSeen) problems.push(`${at}: a second invocationResult`);
        resultSeen = true;
        break;
      case "invocationFinished":
        finished = true;
        if (message.outcome.kind === "success" && !resultSeen) problems.push(`${at}: success without an invocationResult`);
        for (const [c, mapping] of channels) {
          if (mapping.direction === "output" && !ended.has(c)) problems.push(`${at} before output channel ${c} ended`);
        }
        break;
      case "attachmentRevoked":
        revoked = true;
        break;
      default:
        break;
    }
  });
  return problems;
}

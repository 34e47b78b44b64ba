/**
 * Rules every message log of one connection must obey, whatever the
 * scenario (protocol sections 4.3, 6, 8, 11; decisions section 8). Each
 * check returns the broken rules as sentences, so a failing audit says
 * what went wrong instead of which index differed.
 */
import { CHANNEL_MAX, type ServerMessage, type StreamMapping } from "@golem-stream/wire";

export interface LogExpectations {
  /**
   * Output streams announced on this connection that may lack a terminal at
   * invocationFinished: a stream whose terminal the client already holds
   * (terminal cursor) can still be announced by a replayed parent item.
   */
  readonly allowUnterminatedOutputs?: boolean;
}

/** Public text must not carry internals (section 6.2; decisions section 5). */
const LEAKS: readonly [RegExp, string][] = [
  [/\bat .+:\d+:\d+/, "a stack frame"],
  [/\.(?:ts|js|mjs|rs):\d+/, "a source location"],
  [/\b[A-Z][A-Za-z]*Error\b/, "an error class name"],
  [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i, "a UUID (internal id)"],
  [/gai1_/, "a token"],
  [/sqlite|SQLITE|better-sqlite3|SELECT |INSERT /, "a storage detail"],
  [/\[object |undefined|NaN/, "an accidental value rendering"],
  [/hunter2|password|\/srv\//, "a host fault's own text"],
];

export function leaksIn(text: string): string[] {
  return LEAKS.flatMap(([pattern, what]) => (pattern.test(text) ? [`${JSON.stringify(text)} contains ${what}`] : []));
}

/** Every public text a server message carries. */
export function publicTexts(message: ServerMessage): string[] {
  switch (message.type) {
    case "invocationRejected":
      return [message.message];
    case "outputStreamEnd":
      return message.outcome.kind === "error" ? [message.outcome.message] : [];
    case "invocationFinished":
      return message.outcome.kind === "failure" ? [message.outcome.message] : [];
    default:
      return [];
  }
}

interface OutputTrack {
  next: bigint | undefined;
  ended: boolean;
}

interface InputTrack {
  count: bigint;
  terminal: boolean;
}

/** The broken rules of one connection's complete log (empty when it conforms). */
export function checkConnectionLog(messages: readonly ServerMessage[], expect: LogExpectations = {}): string[] {
  const problems: string[] = [];
  const channels = new Map<number, StreamMapping>();
  const tokens = new Set<string>();
  const outputs = new Map<number, OutputTrack>();
  const inputs = new Map<number, InputTrack>();
  const cursors = new Set<string>();
  let results = 0;
  let finishedAt = -1;
  let ended = false;

  const install = (mappings: readonly StreamMapping[], where: string): void => {
    const inMessage = new Set<number>();
    for (const mapping of mappings) {
      if (!Number.isInteger(mapping.channel) || mapping.channel < 1 || mapping.channel > CHANNEL_MAX) {
        problems.push(`${where}: channel ${mapping.channel} is outside 1..4294967295`);
      }
      if (channels.has(mapping.channel) || inMessage.has(mapping.channel))
        problems.push(`${where}: channel ${mapping.channel} mapped twice on one connection`);
      if (tokens.has(mapping.streamToken)) problems.push(`${where}: a stream token is announced twice on one connection`);
      if (mapping.direction === "input" && mapping.inputHighWater === undefined)
        problems.push(`${where}: input mapping without inputHighWater`);
      if (mapping.direction === "output" && mapping.inputHighWater !== undefined)
        problems.push(`${where}: output mapping with inputHighWater`);
      if (mapping.direction === "output" && mapping.provisionalRef !== undefined)
        problems.push(`${where}: output mapping with provisionalRef`);
      inMessage.add(mapping.channel);
      tokens.add(mapping.streamToken);
      channels.set(mapping.channel, mapping);
      if (mapping.direction === "output") outputs.set(mapping.channel, { next: undefined, ended: false });
      else
        inputs.set(mapping.channel, { count: mapping.inputHighWater?.sequence ?? 0n, terminal: mapping.inputHighWater?.terminal ?? false });
    }
  };

  const cursor = (token: string | undefined, where: string): void => {
    if (token === undefined) return;
    if (cursors.has(token)) problems.push(`${where}: a cursor token was issued twice`);
    cursors.add(token);
  };

  const outputEvent = (channel: number, sequence: bigint, items: bigint, terminal: boolean, where: string): void => {
    const track = outputs.get(channel);
    if (track === undefined) {
      problems.push(`${where}: channel ${channel} is not an announced output channel`);
      return;
    }
    if (track.ended) problems.push(`${where}: channel ${channel} has an event after its terminal`);
    if (track.next !== undefined && sequence !== track.next)
      problems.push(`${where}: channel ${channel} expected sequence ${track.next}, got ${sequence}`);
    track.next = sequence + items;
    if (terminal) track.ended = true;
  };

  messages.forEach((message, index) => {
    const where = `#${index} ${message.type}`;
    if (ended) problems.push(`${where}: a message after ${messages[index - 1]?.type}`);
    if (index === 0 && message.type !== "invocationAccepted" && message.type !== "invocationRejected") {
      problems.push(`${where}: the first server message must be invocationAccepted or invocationRejected`);
    }
    for (const text of publicTexts(message)) problems.push(...leaksIn(text).map((leak) => `${where}: ${leak}`));
    switch (message.type) {
      case "invocationAccepted":
        if (index !== 0) problems.push(`${where}: acceptance is not the first message`);
        install(message.mappings, where);
        break;
      case "invocationRejected":
        if (message.attemptId === undefined && index > 0) problems.push(`${where}: a rejection after acceptance needs attemptId`);
        ended = true;
        break;
      case "attachmentRevoked":
        ended = true;
        break;
      case "invocationResult":
        results++;
        if (results > 1) problems.push(`${where}: a second invocationResult`);
        install(message.mappings, where);
        break;
      case "outputStreamItem":
        cursor(message.cursorToken, where);
        outputEvent(message.channel, message.sequence, 1n, false, where);
        install(message.mappings, where);
        break;
      case "output-u8":
        cursor(message.cursorToken, where);
        outputEvent(message.channel, message.sequence, BigInt(message.payload.length), false, where);
        break;
      case "output-binary":
        cursor(message.cursorToken, where);
        outputEvent(message.channel, message.sequence, 1n, false, where);
        break;
      case "outputStreamEnd":
        cursor(message.cursorToken, where);
        outputEvent(message.channel, message.sequence, 0n, true, where);
        break;
      case "inputStreamAck": {
        const track = inputs.get(message.channel);
        if (track === undefined) {
          problems.push(`${where}: channel ${message.channel} is not an announced input channel`);
          break;
        }
        if (message.highestContiguousSequence < track.count) problems.push(`${where}: the cumulative ACK went backwards`);
        if (track.terminal && message.highestContiguousSequence !== track.count)
          problems.push(`${where}: the ACK moved after the terminal`);
        if (track.terminal && !message.terminal) problems.push(`${where}: terminal went from true to false`);
        track.count = message.highestContiguousSequence;
        track.terminal ||= message.terminal;
        install(message.mappings, where);
        break;
      }
      case "streamCancel":
        if (!channels.has(message.channel)) problems.push(`${where}: channel ${message.channel} is not announced`);
        break;
      case "invocationFinished":
        finishedAt = index;
        ended = true;
        if (message.outcome.kind === "success" && results === 0) problems.push(`${where}: success without an invocationResult`);
        break;
    }
  });

  if (finishedAt >= 0) {
    for (const [channel, track] of inputs) {
      if (!track.terminal) problems.push(`input channel ${channel} is not terminal at invocationFinished`);
    }
    if (expect.allowUnterminatedOutputs !== true) {
      for (const [channel, track] of outputs)
        if (!track.ended) problems.push(`output channel ${channel} has no terminal before invocationFinished`);
    }
  }
  return problems;
}

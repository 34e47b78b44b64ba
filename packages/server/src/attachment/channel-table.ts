/**
 * The connection-local channel table (protocol section 8).
 *
 * Channels are assigned by the server, start at 1, are unique across both
 * directions and are never reused or persisted: a new connection builds a
 * new table. A channel is usable only after its mapping has been announced
 * to the client; the table remembers every state a channel can be in so
 * that "unknown", "stale", "wrong direction" and "premature" can each be
 * told apart (all of them are `invalid-channel` on the wire).
 */
import { CHANNEL_MAX, ProtocolError, type StreamDirection } from "@golem-stream/wire";
import { CountLimitError } from "../count-limit-error.js";

export type ChannelState = "reserved" | "open" | "closed";

export interface ChannelEntry {
  readonly channel: number;
  readonly streamId: string;
  readonly direction: StreamDirection;
  state: ChannelState;
  /**
   * One client cancel may cross the stream's terminal in flight on each
   * connection (decisions section 8): the terminal is sent, or replayed,
   * once per connection, so a crossing cancel can happen once per connection.
   */
  lateCancelAccepted: boolean;
}

export class ChannelTable {
  #next = 1;
  readonly #byChannel = new Map<number, ChannelEntry>();
  readonly #byStream = new Map<string, ChannelEntry>();

  /**
   * Assigns a channel to a stream. The channel stays `reserved` (unusable by
   * the client) until `announce` is called when its mapping is sent.
   */
  assign(streamId: string, direction: StreamDirection): ChannelEntry {
    const existing = this.#byStream.get(streamId);
    if (existing !== undefined) return existing;
    if (this.#next > CHANNEL_MAX) {
      throw new CountLimitError("no channel numbers left on this connection");
    }
    const entry: ChannelEntry = { channel: this.#next++, streamId, direction, state: "reserved", lateCancelAccepted: false };
    this.#byChannel.set(entry.channel, entry);
    this.#byStream.set(streamId, entry);
    return entry;
  }

  /** Marks the mapping as sent: from now on the client may use the channel. */
  announce(streamId: string): void {
    const entry = this.#byStream.get(streamId);
    if (entry !== undefined && entry.state === "reserved") entry.state = "open";
  }

  /** Marks the stream terminal on this connection; later use is stale. */
  close(streamId: string): void {
    const entry = this.#byStream.get(streamId);
    if (entry !== undefined) entry.state = "closed";
  }

  forStream(streamId: string): ChannelEntry | undefined {
    return this.#byStream.get(streamId);
  }

  get(channel: number): ChannelEntry | undefined {
    return this.#byChannel.get(channel);
  }

  /**
   * The entry a client message may use, or `invalid-channel`. `allowClosed`
   * admits a closed channel (a cancel crossing a terminal in flight).
   */
  require(channel: number, direction: StreamDirection, what: string, allowClosed = false): ChannelEntry {
    const entry = this.#byChannel.get(channel);
    if (entry === undefined) {
      throw new ProtocolError("invalid-channel", `${what} uses an unknown channel`);
    }
    if (entry.state === "reserved") {
      throw new ProtocolError("invalid-channel", `${what} uses a channel before its mapping was announced`);
    }
    if (entry.direction !== direction) {
      throw new ProtocolError("invalid-channel", `${what} uses a channel of the other direction`);
    }
    if (entry.state === "closed" && !allowClosed) {
      throw new ProtocolError("invalid-channel", `${what} uses a channel whose stream has ended`);
    }
    return entry;
  }
}

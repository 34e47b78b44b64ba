/**
 * What the halves of one attachment share (see attachment.ts): the live
 * session, the connection's channel table, and the attachment's ways to
 * send, map and fail. The halves never touch the transport themselves.
 */
import type { StreamMapping } from "@golem-stream/wire";
import type { ChannelTable } from "./channel-table.js";
import type { OutgoingMessage } from "../transport/transport.js";
import type { LiveSession } from "../invocation/live-session.js";
import type { StreamState } from "../invocation/stream-state.js";

export interface AttachmentLink {
  readonly session: LiveSession;
  readonly channels: ChannelTable;
  /** True once the transport closed or was replaced: nothing more is sent. */
  isEnded(): boolean;
  /** Hands one message to the transport (in call order); a no-op once ended. Settles as `SessionTransport.send` does (`SENT`: go on at once). */
  send(message: OutgoingMessage): Promise<void>;
  /** Assigns `stream` a channel on this connection and describes it. */
  mapping(stream: StreamState, withProvisionalRef: boolean): StreamMapping;
  /** The message carrying `stream`'s mapping has been handed to the transport. */
  announced(stream: StreamState): void;
  /** An unexpected failure: the attachment reports internal-error and detaches. */
  fault(error: unknown): void;
  /** Something `invocationFinished` waits for may have settled. */
  maybeFinish(): void;
}

/**
 * The attachment's side of a live session, as the session sees it: what it
 * tells the one attachment that owns the session (`AttachmentSink`), and
 * what it answers when that attachment hands it a client's input chunk
 * (`AcceptedInput`, `InputCommitListener`). Declared here, in the folder
 * that calls them, so the invocation never imports `attachment/` (which
 * implements them, above it in the runtime's order; docs/architecture.md).
 */
import type { ServerCancelReason } from "@golem-stream/wire";
import type { OutputEvent } from "../store/session-store.js";
import type { StreamState } from "./stream-state.js";

/** What a live session tells the attachment that currently owns it. */
export interface AttachmentSink {
  /** The attachment generation it serves, and its id (cluster revocation names it). */
  readonly generation: bigint;
  readonly attachmentId: string;
  /** `committed`: the event this process just committed (the attachment may send it without reading the store). */
  outputAppended(stream: StreamState, committed?: OutputEvent): void;
  resultCommitted(): void;
  /** The server made an input terminal (cancel); the client must be told. */
  inputCancelledByServer(stream: StreamState, reason: ServerCancelReason): void;
  finished(): void;
  /** Another transport took the session over. */
  revoke(): void;
  /** Another node claimed the session (fencing): this node serves it no more; the client resumes from what the store holds. */
  ownershipMoved(): void;
}

/** An accepted input chunk: its commit, and the stream's count after it. */
export interface AcceptedInput {
  readonly committed: Promise<void>;
  readonly count: bigint;
}

/**
 * What `acceptInput` answers for an accepted chunk when only the `InputCommitListener` it was
 * given is told of the commit: no promise of it was made (the stream's `inputCommitted` waits
 * for it all the same).
 */
export const LISTENER_TOLD = "listener-told";

/** What `acceptInput` answers: the chunk accepted (with or without a promise of its commit), or not (undefined). */
export type InputAcceptance = AcceptedInput | typeof LISTENER_TOLD | undefined;

/**
 * Told of accepted chunks' commit by the reaction that also releases the chunks' permits:
 * one reaction per commit instead of one here and another for the ACK (attachment-input.ts).
 * One outcome may cover several chunks of one stream, accepted one after another (their
 * writes joined in the store: watched-input-commit.ts); `chunks` says how many.
 * Neither method may throw.
 */
export interface InputCommitListener {
  /** The stream's input up to `count` is committed (durable): `chunks` accepted chunks. */
  committed(stream: StreamState, count: bigint, chunks: number): void;
  /** The commit of `chunks` accepted chunks failed; called after the invocation was told. */
  failed(error: unknown, chunks: number): void;
}

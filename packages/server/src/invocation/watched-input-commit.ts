/**
 * Accepted input chunks whose commit the store tells (`SessionStore.acceptInputWatched`)
 * instead of a promise: what the session's reaction to the commit did, as one small object
 * and no closure, promise or reaction. At the outcome it releases the permits the store's
 * copy held (and the agent's, when a chunk was not queued for it), tells the attachment's
 * listener (which acknowledges only a commit that succeeded), fails the invocation if the
 * commit failed, and lets what waits on the stream's `inputCommitted` go on.
 *
 * One chunk at first; the chunks of the same stream that join its write in the store before
 * it commits (`SessionStore.joinInputWatched`) are added to it (`extend`), so a burst of small
 * items costs one of these, and one outcome, per group commit instead of one per item.
 */
import type { InputCommitListener } from "./attachment-sink.js";
import type { BytePermits } from "./byte-permits.js";
import type { JoinableInputCommit, StreamState } from "./stream-state.js";

/** What every watched commit of one session shares. */
export interface WatchedCommitHost {
  readonly permits: BytePermits;
  /** Fails the invocation (once); never rejects. */
  fail(error: unknown): Promise<void>;
}

export class WatchedInputCommit implements JoinableInputCommit {
  constructor(
    private readonly host: WatchedCommitHost,
    private readonly stream: StreamState,
    /** Where its first chunk starts: after a failure, where the stream's commits end. */
    private readonly first: bigint,
    /** The stream's count after its last chunk. */
    private count: bigint,
    /** Permits released at the outcome. */
    private releaseBytes: number,
    /** Told of the outcome: only chunks of the same listener (attachment) may be added. */
    readonly listener: InputCommitListener,
  ) {}

  /** The chunks this commit covers. */
  private chunks = 1;

  /** A chunk that joined this commit's write in the store: the stream's count after it, and its permits. */
  extend(count: bigint, releaseBytes: number): void {
    this.count = count;
    this.releaseBytes += releaseBytes;
    this.chunks++;
  }

  inputSettled(error: Error | undefined): void {
    try {
      if (this.releaseBytes > 0) this.host.permits.release(this.releaseBytes);
      if (error === undefined) {
        this.listener.committed(this.stream, this.count, this.chunks);
      } else {
        // None of its chunks is stored, nor any after them (the store appends only at the end):
        // the stream ends where its commits end, which its terminal and last ACK then report.
        if (this.first < this.stream.count) this.stream.count = this.first;
        void this.host.fail(error);
        this.listener.failed(error, this.chunks);
      }
    } finally {
      // Nothing joins a settled commit, and the stream should not keep its listener's attachment alive.
      if (this.stream.lastWatchedCommit === this) this.stream.lastWatchedCommit = undefined;
      this.stream.watchedCommitSettled();
    }
  }
}

/**
 * One accepted input chunk whose commit the store tells (`SessionStore.acceptInputWatched`)
 * instead of a promise: what the session's reaction to the commit did, as one small object
 * per chunk and no closure, promise or reaction. At the outcome it releases the permits the
 * store's copy held (and the agent's, when the chunk was not queued for it), tells the
 * attachment's listener (which acknowledges only a commit that succeeded), fails the
 * invocation if the commit failed, and lets what waits on the stream's `inputCommitted` go on.
 */
import type { InputCommitWatcher } from "../store/session-store.js";
import type { InputCommitListener } from "./attachment-sink.js";
import type { BytePermits } from "./byte-permits.js";
import type { StreamState } from "./stream-state.js";

/** What every watched commit of one session shares. */
export interface WatchedCommitHost {
  readonly permits: BytePermits;
  /** Fails the invocation (once); never rejects. */
  fail(error: unknown): Promise<void>;
}

export class WatchedInputCommit implements InputCommitWatcher {
  constructor(
    private readonly host: WatchedCommitHost,
    private readonly stream: StreamState,
    /** The stream's count after the chunk. */
    private readonly count: bigint,
    /** Permits released at the outcome. */
    private readonly releaseBytes: number,
    private readonly listener: InputCommitListener,
  ) {}

  inputSettled(error: Error | undefined): void {
    try {
      if (this.releaseBytes > 0) this.host.permits.release(this.releaseBytes);
      if (error === undefined) {
        this.listener.committed(this.stream, this.count);
      } else {
        void this.host.fail(error);
        this.listener.failed(error);
      }
    } finally {
      this.stream.watchedCommitSettled();
    }
  }
}

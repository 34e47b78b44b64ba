/**
 * The changes a change feed's subscribers may have missed while its
 * listener was disconnected (`change-feed.ts`), made again from the
 * committed state.
 */
import type { SessionChange, SessionRecord, StreamRecord } from "@golem-stream/server/store";

/** The reads a replay makes. */
export interface ReplayReads {
  getSession(sessionId: string): Promise<SessionRecord | undefined>;
  listStreams(sessionId: string): Promise<StreamRecord[]>;
}

/**
 * After the listener reconnects: notifications sent meanwhile are lost, so
 * every subscriber of `sessionIds` gets (`dispatch`), from the committed
 * state, each change a write could have sent: `resync` (other changes may be
 * lost), `attached` with the current generation, `input`/`output` for every
 * stream, then `result` and `finished` if recorded. Changes carry no
 * payload; subscribers re-read the store. A session whose reads fail is
 * skipped, its error given to `onError`.
 */
export async function replayChanges(
  sessionIds: readonly string[],
  reads: ReplayReads,
  dispatch: (sessionId: string, change: SessionChange) => void,
  onError: (error: Error) => void,
): Promise<void> {
  for (const sessionId of sessionIds) {
    let session: SessionRecord | undefined;
    let streams: StreamRecord[];
    try {
      // Asked together: one round trip (session-reads.ts); a session that is gone has no streams.
      [session, streams] = await Promise.all([reads.getSession(sessionId), reads.listStreams(sessionId)]);
    } catch (error) {
      onError(error instanceof Error ? error : new Error(String(error)));
      continue;
    }
    if (session === undefined) continue;
    // Changes that are not writes (delivery progress above all) may have been lost too.
    dispatch(sessionId, { kind: "resync" });
    dispatch(sessionId, { kind: "attached", generation: session.generation.toString() });
    for (const stream of streams) dispatch(sessionId, { kind: stream.direction, streamId: stream.streamId });
    if (session.result !== undefined) dispatch(sessionId, { kind: "result" });
    if (session.state === "finished") dispatch(sessionId, { kind: "finished" });
  }
}

/**
 * The output cursors of a resume or takeover (section 9): each a verified
 * cursor token of this caller and session, naming an output stream at an
 * event its log holds, at most one per stream. The attachment then sends
 * each stream from after its cursor.
 */
import { ProtocolError } from "@golem-stream/wire";
import type { LiveSession } from "../invocation/live-session.js";
import { asSendable } from "../invocation/message-room.js";
import type { SessionStore } from "../store/session-store.js";
import type { Principal } from "../options.js";
import { asInvalidToken, type CursorPosition, type TokenService } from "./token-service.js";

export async function verifyCursors(
  deps: { readonly tokens: TokenService; readonly store: SessionStore },
  tokens: readonly string[],
  caller: Principal,
  live: LiveSession,
): Promise<Map<string, CursorPosition>> {
  const cursors = new Map<string, CursorPosition>();
  for (const token of tokens) {
    let cursor: CursorPosition;
    try {
      cursor = deps.tokens.verifyCursor(token, caller, live.sessionId);
    } catch (error) {
      throw asInvalidToken(error);
    }
    const stream = live.stream(cursor.streamId);
    if (stream === undefined || stream.direction !== "output") throw new ProtocolError("invalid-token", "the token is not valid here");
    if (cursors.has(cursor.streamId)) {
      throw new ProtocolError("invalid-message", "outputCursors holds two cursors for one stream");
    }
    const [logged] = await deps.store.readOutput(cursor.streamId, cursor.position, 1);
    // Read as an attachment sends it: an unsendable legacy item is its stream's terminal (message-room.ts).
    const event =
      logged === undefined
        ? undefined
        : asSendable(
            logged,
            stream.elementKind,
            live.childrenOf(stream.streamId, logged.sequence).map((child) => child.token),
          );
    if (event === undefined || event.sequence !== cursor.position || event.event !== cursor.event) {
      throw new ProtocolError("invalid-token", "the token is not valid here");
    }
    cursors.set(cursor.streamId, cursor);
  }
  return cursors;
}

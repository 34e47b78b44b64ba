/**
 * Telling a session socket whose peer is gone from one that is merely
 * quiet. A client that vanished behind a NAT or a suspended laptop sends no
 * close and no FIN; without these checks its socket (and its attachment)
 * would look alive forever, and the session's detached timeout would never
 * start.
 *
 * - **First message.** A socket must send its first message (a start or a
 *   resume) within `firstMessageTimeoutMs`; then it is closed with 1002.
 * - **Pings.** Every `pingIntervalMs` (0: never) the server sends a ping; a peer that
 *   has answered neither of the last two (no pong and no message since) is
 *   terminated (1006 on the client's side: its connection is lost, and it
 *   resumes as after any network failure). While the server itself does not
 *   read the socket (backpressure) or the peer does not read it (bytes wait
 *   in the socket's buffer), a late pong proves nothing and nothing is
 *   counted: a stalled transfer is left to TCP's own retransmission timeout.
 *
 * Either way the socket closes, its connection detaches its attachment, and
 * the detached timeout of the session starts.
 */
import type { WebSocket } from "ws";
import type { Timers } from "../timers.js";

/** Why a socket was closed by the server for saying nothing. */
export type { SilenceReason } from "../observability/server-observer.js";
import type { SilenceReason } from "../observability/server-observer.js";

export interface LivenessSettings {
  readonly firstMessageTimeoutMs: number;
  readonly pingIntervalMs: number;
}

/**
 * What the socket's one `message` listener tells the watch. Not a listener of
 * its own: `ws` emits every message to each listener, and with two a burst
 * of small items paid, per message, the copy of the listener array Node's
 * `emit` makes and a second call (docs/performance.md).
 */
export interface LivenessWatch {
  /** A message arrived: the peer has spoken (the first-message timer stops) and is alive. */
  heard(): void;
}

/** Pings missed in a row before the peer counts as gone. */
const MISSED_PINGS = 2;

/**
 * Watches one accepted socket until it closes, on `timers`. `silent` is
 * called once when the socket is given up, before it is closed.
 */
export function watchLiveness(
  ws: WebSocket,
  settings: LivenessSettings,
  timers: Timers,
  silent: (reason: SilenceReason) => void,
): LivenessWatch {
  let spoken = false;
  let missed = 0;
  let awaitingPong = false;
  const answered = (): void => {
    missed = 0;
    awaitingPong = false;
  };
  const firstMessage = timers.setTimeout(() => {
    if (spoken) return;
    silent("first-message");
    closeThenDrop(ws, 1002, "no first message in time", timers);
  }, settings.firstMessageTimeoutMs);
  const ping = (): void => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.isPaused || ws.bufferedAmount > 0) {
      // Backpressure in either direction: a pong may be waiting behind it (see the file comment).
      answered();
      return;
    }
    if (awaitingPong && ++missed >= MISSED_PINGS) {
      silent("ping");
      ws.terminate();
      return;
    }
    awaitingPong = true;
    ws.ping();
  };
  const pings = settings.pingIntervalMs === 0 ? undefined : timers.setInterval(ping, settings.pingIntervalMs);
  ws.on("pong", answered);
  ws.once("close", () => {
    timers.clearTimeout(firstMessage);
    if (pings !== undefined) timers.clearInterval(pings);
  });
  return {
    heard: () => {
      if (!spoken) {
        spoken = true;
        timers.clearTimeout(firstMessage);
      }
      answered();
    },
  };
}

/**
 * How long a socket the server closed may take to answer the close frame
 * before it is dropped: a live peer answers at once; a silent one would
 * otherwise hold the socket for `ws`'s 30-second close timeout.
 */
export const CLOSE_ANSWER_GRACE_MS = 1_000;

/** Sends a close frame and drops the socket if the peer has not answered it within `CLOSE_ANSWER_GRACE_MS` (on `timers`). */
export function closeThenDrop(ws: WebSocket, code: number, reason: string, timers: Timers): void {
  ws.close(code, reason);
  const drop = timers.setTimeout(() => ws.terminate(), CLOSE_ANSWER_GRACE_MS);
  ws.once("close", () => timers.clearTimeout(drop));
}

/**
 * A transport that knows its open connections, so the CLI can let them
 * close before the process exits.
 *
 * Exiting with a connection still open loses what is queued on it: the
 * last frames (an invocation-wide cancel is a `streamCancel` per stream)
 * may still sit in the socket's buffers, and closing a socket with unread
 * bytes makes the kernel reset it. So after a cancel the CLI waits for the
 * WebSocket close handshake: once the server's close frame has arrived, it
 * has read everything sent before ours.
 */
import type { Connection, ConnectionHandlers, ConnectRequest, Transport } from "@golem-stream/client";

/**
 * How this process's connections ended: `closed`, every close this side asked for was answered by
 * the server's close frame; `broken`, one of them ended without it (the connection died, so what
 * was sent last may not have arrived); `timeout`, one was still open after the wait.
 */
export type ClosingOutcome = "closed" | "broken" | "timeout";

export interface ClosingTransport extends Transport {
  /** Resolves once no connection is open or being opened, or after `timeoutMs`. */
  allClosed(timeoutMs: number): Promise<ClosingOutcome>;
}

/** The status `ws` reports when the socket ended without a close frame from the peer. */
const CLOSED_ABNORMALLY = 1006;

export function closingTransport(inner: Transport): ClosingTransport {
  let open = 0;
  let broken = false;
  const waiters = new Set<() => void>();
  const release = (): void => {
    open--;
    if (open === 0) for (const wake of waiters) wake();
  };
  return {
    async connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection> {
      open++;
      let closed = false;
      let closing = false;
      const closedOnce = (): void => {
        if (closed) return;
        closed = true;
        release();
      };
      let connection: Connection;
      try {
        connection = await inner.connect(request, {
          onMessage: (message, wireBytes) => handlers.onMessage(message, wireBytes),
          onClose: (info) => {
            if (closing && (info.code === CLOSED_ABNORMALLY || info.error !== undefined)) broken = true;
            closedOnce();
            handlers.onClose(info);
          },
        });
      } catch (error) {
        closedOnce();
        throw error;
      }
      return {
        send: (message) => connection.send(message),
        pause: () => connection.pause(),
        resume: () => connection.resume(),
        close: (code, reason) => {
          closing = true;
          // A paused socket would never read the server's answering close frame: read again,
          // so the close handshake completes (the runtime ignores what arrives after it).
          connection.resume();
          connection.close(code, reason);
        },
      };
    },
    allClosed(timeoutMs: number): Promise<ClosingOutcome> {
      const outcome = (): ClosingOutcome => (broken ? "broken" : "closed");
      if (open === 0) return Promise.resolve(outcome());
      return new Promise((resolve) => {
        const done = (result: ClosingOutcome): void => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(result);
        };
        const wake = (): void => done(outcome());
        const timer = setTimeout(() => done("timeout"), timeoutMs);
        waiters.add(wake);
      });
    },
  };
}

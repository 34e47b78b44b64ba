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

export interface ClosingTransport extends Transport {
  /**
   * Resolves true once no connection is open or being opened, or false
   * after `timeoutMs` with one still open (the server did not answer the close).
   */
  allClosed(timeoutMs: number): Promise<boolean>;
}

export function closingTransport(inner: Transport): ClosingTransport {
  let open = 0;
  const waiters = new Set<() => void>();
  const release = (): void => {
    open--;
    if (open === 0) for (const wake of waiters) wake();
  };
  return {
    async connect(request: ConnectRequest, handlers: ConnectionHandlers): Promise<Connection> {
      open++;
      let closed = false;
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
          // A paused socket would never read the server's answering close frame: read again,
          // so the close handshake completes (the runtime ignores what arrives after it).
          connection.resume();
          connection.close(code, reason);
        },
      };
    },
    allClosed(timeoutMs: number): Promise<boolean> {
      if (open === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = (all: boolean): void => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(all);
        };
        const wake = (): void => done(true);
        const timer = setTimeout(() => done(false), timeoutMs);
        waiters.add(wake);
      });
    },
  };
}

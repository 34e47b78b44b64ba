/**
 * Tools of the loopback cancel suites: a ws transport that records what the
 * server sends (and lets a test wait on it without timers), the input
 * mappings of a recorded acceptance, how a stream ended, and an input source
 * that stays open until it is cancelled.
 */
import type { ServerMessage, StreamMapping } from "@golem-stream/wire";
import { wsTransport, type Transport } from "../../src/index.js";

/**
 * A ws transport that records every message the runtime received: on each connection, until the
 * runtime closed it (what arrives while the close handshake completes is not read by anyone).
 * `until` resolves once `predicate` holds after a message.
 */
export function recording(): { transport: Transport; received: ServerMessage[]; until(predicate: () => boolean): Promise<void> } {
  const inner = wsTransport();
  const received: ServerMessage[] = [];
  const waiters = new Set<() => void>();
  const transport: Transport = {
    connect: async (request, handlers) => {
      let closing = false;
      const connection = await inner.connect(request, {
        onMessage: (message, wireBytes) => {
          if (closing) return;
          received.push(message);
          handlers.onMessage(message, wireBytes);
          for (const check of [...waiters]) check();
        },
        onClose: (info) => handlers.onClose(info),
      });
      // The same object (the runtime recognises its own transport's connections), its close noted.
      const close = connection.close.bind(connection);
      connection.close = (code, reason) => {
        closing = true;
        close(code, reason);
      };
      return connection;
    },
  };
  const until = (predicate: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (!predicate()) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
    });
  return { transport, received, until };
}

export function acceptanceInputs(received: readonly ServerMessage[]): StreamMapping[] {
  const accepted = received.find((message) => message.type === "invocationAccepted");
  if (accepted?.type !== "invocationAccepted") throw new Error("no acceptance recorded");
  return accepted.mappings.filter((mapping) => mapping.direction === "input");
}

/** Reads a stream to its end; returns the error it ended with, if any. */
export async function endOf(iterable: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const _ of iterable);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** An input source that yields `items`, then waits — without a timer — until it is cancelled. */
export function openSource<T>(items: readonly T[]): ReadableStream<T> {
  return new ReadableStream<T>({
    start(controller) {
      for (const item of items) controller.enqueue(item);
    },
  });
}

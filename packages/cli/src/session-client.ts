/**
 * The session client of `invoke` and `resume`, with the command line's
 * `--retries` and `--timeout` mapped onto the client's knobs, and its
 * transport kept at hand so the command can let its connections close
 * before the process exits (closing-transport.ts).
 */
import { createClient, wsTransport } from "@golem-stream/client";
import type { Client } from "@golem-stream/client";
import { closingTransport } from "./closing-transport.js";
import type { ClosingTransport } from "./closing-transport.js";
import type { Connection } from "./connection.js";
import type { RunOptions } from "./program.js";

export interface SessionClient {
  readonly client: Client;
  readonly transport: ClosingTransport;
}

export function sessionClient(connection: Connection, options: RunOptions): SessionClient {
  // One bound for every wait on the server: the WebSocket handshake, and the answer to the
  // first message (start, resume, takeover), after which the same descriptor is retried.
  const transport = closingTransport(wsTransport({ handshakeTimeoutMs: options.timeoutMs }));
  const client = createClient({
    url: connection.url,
    token: connection.token,
    // Retries without progress (the client's budget: an accepted connection that moves nothing
    // does not reset it, so a server that accepts and then fails at once cannot loop forever).
    reconnect: { maxAttempts: options.retries },
    transport,
    acceptanceTimeoutMs: options.timeoutMs,
  });
  return { client, transport };
}

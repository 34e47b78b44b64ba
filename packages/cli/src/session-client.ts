/**
 * The session client of `invoke` and `resume`, with the command line's
 * `--retries` and `--timeout` mapped onto the client's knobs.
 */
import { createClient, wsTransport } from "@golem-stream/client";
import type { Client } from "@golem-stream/client";
import type { Connection } from "./connection.js";
import type { RunOptions } from "./program.js";

export function sessionClient(connection: Connection, options: RunOptions): Client {
  return createClient({
    url: connection.url,
    token: connection.token,
    // Retries without progress (the client's budget: an accepted connection that moves nothing
    // does not reset it, so a server that accepts and then fails at once cannot loop forever).
    reconnect: { maxAttempts: options.retries },
    // One bound for every wait on the server: the WebSocket handshake, and the answer to the
    // first message (start, resume, takeover), after which the same descriptor is retried.
    transport: wsTransport({ handshakeTimeoutMs: options.timeoutMs }),
    acceptanceTimeoutMs: options.timeoutMs,
  });
}

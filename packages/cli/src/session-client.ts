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
    reconnect: { maxAttempts: options.retries },
    // TODO(issue 13): also map --timeout to the client's acceptance timeout (the answer to a
    // first message) once @golem-stream/client has one; today it bounds the WebSocket handshake.
    transport: wsTransport({ handshakeTimeoutMs: options.timeoutMs }),
  });
}

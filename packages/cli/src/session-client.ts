/**
 * The session client of `invoke` and `resume`, with the command line's
 * `--retries` and `--timeout` mapped onto the client's knobs.
 */
import { createClient, wsTransport } from "@golem-stream/client";
import type { Client } from "@golem-stream/client";
import type { Connection } from "./connection.js";
import { CANCEL_CLOSE_WAIT_MS, CANCEL_RETURN_WAIT_MS } from "./output/session-runner.js";
import type { RunOptions } from "./options.js";

export interface SessionClient {
  readonly client: Client;
}

export function sessionClient(connection: Connection, options: RunOptions): SessionClient {
  // One bound for every wait on the server: the WebSocket handshake, and the answer to the
  // first message (start, resume, takeover), after which the same descriptor is retried.
  const transport = wsTransport({ handshakeTimeoutMs: options.timeoutMs });
  const client = createClient({
    url: connection.url,
    token: connection.token,
    // Retries without progress (the client's budget: an accepted connection that moves nothing
    // does not reset it, so a server that accepts and then fails at once cannot loop forever).
    reconnect: { maxAttempts: options.retries },
    transport,
    acceptanceTimeoutMs: options.timeoutMs,
    // A cancel on Ctrl-C is delivered once the server answered the close behind it: the process
    // exits right after, so it must not leave earlier, nor wait long for a server that is gone.
    cancelConfirmTimeoutMs: CANCEL_CLOSE_WAIT_MS,
    // …and a method whose inputs it ended is given as long to stop: one that does not read them
    // never will, and Ctrl-C must not wait for it to return (docs/protocol/cli.md).
    cancelReturnTimeoutMs: CANCEL_RETURN_WAIT_MS,
  });
  return { client };
}

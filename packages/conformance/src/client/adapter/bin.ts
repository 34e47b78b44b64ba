#!/usr/bin/env node
/**
 * golem-stream-conformance-client-adapter: the client adapter for
 * @golem-stream/client, for `golem-stream-conformance client --adapter`.
 * Commands on stdin, events on stdout, one JSON object per line.
 */
import { runClientAdapter } from "./golem-stream-client.js";

await runClientAdapter();
// Sockets of a detached invocation may linger; the adapter's work is done.
process.exit(0);

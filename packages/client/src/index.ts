/**
 * @golem-stream/client — invoke agent methods whose parameters and results
 * contain streams, over one WebSocket per invocation that survives
 * disconnects without losing, duplicating or skipping data.
 *
 *   const client = createClient({ url, token });
 *   const call = client.invoke({ …, methodParameters: record([inputStream.strings(lines)]) });
 *   const result = await call.result;
 *   for await (const item of result.streams[0]) …
 *   await call.finished;
 *
 * This is the Node build (the `node` export condition): its default
 * transport is `ws`, which sends `Authorization`, reads a refused
 * handshake's error envelope and lets TCP push back on a paused reader.
 * Browsers get browser.ts, which never imports `ws`.
 */
import { createClientWith, type Client, type ClientOptions } from "./client.js";
import { wsTransport } from "./ws-transport.js";

export * from "./api.js";
export { wsTransport, type WsTransportOptions } from "./ws-transport.js";

/** A client; its default transport is `wsTransport()` (see `ClientOptions.transport`). */
export function createClient(options: ClientOptions): Client {
  return createClientWith(options, () => wsTransport());
}

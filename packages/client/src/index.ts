/**
 * @golem-stream/client — invoke agent methods whose parameters and results
 * contain streams, over one WebSocket per invocation that survives
 * disconnects without losing, duplicating or skipping data. An example
 * (type-checked by test/readme-examples.e2e.test.ts, as the README's are):
 *
 * ```ts
 * import { createClient, inputStream } from "@golem-stream/client";
 *
 * const client = createClient({ url: "http://127.0.0.1:9881", token: "s3cret" });
 * // reverse(input: stream<string>) -> stream<string>
 * const call = client.invoke({
 *   application: "demo",
 *   environment: "default",
 *   agentType: "echo",
 *   constructorParameters: { kind: "record", value: { fields: [{ kind: "string", value: "reader-1" }] } },
 *   method: "reverse",
 *   methodParameters: { kind: "record", value: { fields: [inputStream.strings(["abc", "héllo"])] } },
 * });
 * const result = await call.result;
 * if (result.kind === "value") for await (const item of result.streams[0]!.values()) console.log(item.value);
 * await call.finished;
 * ```
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
export type { WsTlsOptions } from "./ws-tls-options.js";

/** A client; its default transport is `wsTransport()` (see `ClientOptions.transport`). */
export function createClient(options: ClientOptions): Client {
  return createClientWith(options, () => wsTransport());
}

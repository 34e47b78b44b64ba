/**
 * @golem-stream/client for browsers and every runtime outside Node (the
 * `browser` and `default` export conditions): the same API as the Node build
 * (index.ts), with `webSocketTransport()` over the global `WebSocket` as the
 * default transport and no import of `ws` or of a Node built-in, so a bundle
 * for the browser never contains them.
 */
import { createClientWith, type Client, type ClientOptions } from "./client.js";
import { ClientError } from "./errors.js";
import type { Transport } from "./transport.js";
import { globalWebSocket, webSocketTransport } from "./web-socket-transport.js";
import type { WsTransportOptions } from "./ws-transport.js";

export * from "./api.js";
export type { WsTransportOptions } from "./ws-transport.js";
export type { WsTlsOptions } from "./ws-tls-options.js";

/**
 * A client; its default transport is `webSocketTransport()`. Without a global
 * `WebSocket` and without `options.transport` it throws at once, naming the
 * fix, rather than failing every connection attempt later.
 */
export function createClient(options: ClientOptions): Client {
  return createClientWith(options, () => {
    if (globalWebSocket() === undefined) {
      throw new ClientError(
        "invalid-argument",
        "this runtime has no global WebSocket: pass options.transport (under Node, import the package's Node build, which uses ws)",
      );
    }
    return webSocketTransport();
  });
}

/** The `ws` transport exists in the Node build only; here it says so instead of bundling `ws`. */
export function wsTransport(_options?: WsTransportOptions): Transport {
  throw new ClientError(
    "invalid-argument",
    "wsTransport needs Node and the ws package: this is the browser build of @golem-stream/client, whose default transport is webSocketTransport()",
  );
}

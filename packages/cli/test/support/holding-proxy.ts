/**
 * Plans for test-support's TCP proxy that let a test crash the CLI inside
 * the window between sending a start and processing its acceptance.
 *
 * Plain HTTP (the discovery request) is relayed untouched. A WebSocket
 * upgrade is either held whole (`"all"`: the start never reaches the server)
 * or relayed with the server's `101`, its messages after it held (`"answers"`:
 * the server accepts the start, the client never hears of it).
 */
import type { ConnectionInfo, ConnectionPlan, TcpProxy } from "@golem-stream/test-support";

export type Hold = "all" | "answers";

export function holding(hold: Hold): (connection: ConnectionInfo) => ConnectionPlan | undefined {
  return (connection) => (!connection.webSocket ? undefined : hold === "all" ? { holdRequest: true } : { holdAnswers: true });
}

/** WebSocket upgrade requests the proxy has seen. */
export function sessions(proxy: TcpProxy): number {
  return proxy.connections.filter((connection) => connection.webSocket).length;
}

/** Bytes the proxy kept from their destination, all connections. */
export function heldBytes(proxy: TcpProxy): number {
  return proxy.connections.reduce((sum, connection) => sum + connection.heldBytes, 0);
}

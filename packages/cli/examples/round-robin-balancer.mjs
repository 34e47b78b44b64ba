// A round-robin TCP balancer for trying a cluster on one machine (used by cluster-demo.mjs and
// the CLI's cluster tests): each new connection goes to the next node, bytes are relayed as they
// are, and any connection can be cut (both sides destroyed, as a failing network would). A node
// that refuses the TCP connection is skipped for that connection.
import net from "node:net";

/**
 * @param {readonly string[]} upstreams node URLs, e.g. "http://127.0.0.1:8081"
 * @param {{ host?: string, port?: number }} [options]
 */
export async function startBalancer(upstreams, options = {}) {
  if (upstreams.length === 0) throw new TypeError("the balancer needs at least one upstream");
  const targets = upstreams.map((upstream) => {
    const url = new URL(upstream);
    return { url: upstream, host: url.hostname, port: Number(url.port) };
  });
  /** @type {import("./round-robin-balancer.d.mts").BalancedConnection[]} */
  const connections = [];
  const sockets = new Set();
  const waiters = new Set();
  const changed = () => {
    for (const check of [...waiters]) check();
  };
  let next = 0;
  const connectionSockets = new WeakMap();

  const server = net.createServer((client) => {
    sockets.add(client);
    client.pause();
    const connection = {
      id: connections.length + 1,
      upstream: -1,
      node: "",
      websocket: false,
      sentBytes: 0,
      receivedBytes: 0,
      open: true,
      cut: false,
    };
    connections.push(connection);
    const pieces = { client, target: undefined };
    connectionSockets.set(connection, pieces);
    const close = () => {
      if (!connection.open) return;
      connection.open = false;
      client.destroy();
      pieces.target?.destroy();
      changed();
    };
    client.on("error", close);
    client.on("close", close);
    client.on("data", (chunk) => {
      if (connection.sentBytes === 0 && /^upgrade:\s*websocket/im.test(chunk.toString("latin1"))) connection.websocket = true;
      connection.sentBytes += chunk.length;
      changed();
    });
    const attempt = (tries) => {
      const index = next++ % targets.length;
      const target = targets[index];
      const socket = net.connect(target.port, target.host);
      sockets.add(socket);
      socket.once("error", () => {
        socket.destroy();
        if (!connection.open) return;
        if (pieces.target === undefined && tries + 1 < targets.length) attempt(tries + 1);
        else close();
      });
      socket.once("connect", () => {
        if (!connection.open) return socket.destroy();
        pieces.target = socket;
        connection.upstream = index;
        connection.node = target.url;
        socket.on("error", close);
        socket.on("close", close);
        socket.on("data", (chunk) => {
          connection.receivedBytes += chunk.length;
          changed();
        });
        client.pipe(socket);
        socket.pipe(client);
        client.resume();
        changed();
      });
    };
    attempt(0);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve(undefined));
  });
  const address = /** @type {net.AddressInfo} */ (server.address());
  return {
    url: `http://${address.address}:${address.port}`,
    connections,
    until(predicate, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`balancer: timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        const check = () => {
          const found = predicate(connections);
          if (found) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(found);
          }
        };
        waiters.add(check);
        check();
      });
    },
    cut(connection) {
      const pieces = connectionSockets.get(connection);
      if (pieces === undefined || !connection.open) return false;
      connection.cut = true;
      pieces.client.destroy();
      pieces.target?.destroy();
      return true;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve(undefined)));
    },
  };
}

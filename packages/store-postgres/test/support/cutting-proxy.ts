/**
 * A TCP proxy in front of PostgreSQL that loses a connection at the worst moment: it cuts the
 * next connection that sends a message containing a marker text, after passing that message to
 * the server and dropping its answer, or at once, without passing it.
 */
import { createServer, connect as connectTcp, type AddressInfo, type Socket } from "node:net";

export interface CuttingProxy {
  readonly url: string;
  /**
   * Cuts the next connection that sends a message containing `marker`: after passing it to the
   * server and dropping the server's answer (`pass`), or at once, without passing it.
   */
  arm(marker: string, pass: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function cuttingProxy(databaseUrl: string): Promise<CuttingProxy> {
  const target = new URL(databaseUrl);
  let armed: { marker: string; pass: boolean; cut: () => void } | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connectTcp(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let dropping = false;
    const cut = (): void => {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    };
    client.on("data", (chunk: Buffer) => {
      const trap = armed;
      if (trap !== undefined && chunk.toString("latin1").includes(trap.marker)) {
        armed = undefined;
        trap.cut();
        if (!trap.pass) return cut();
        dropping = true;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      // The answer to the trapped message: it never reaches the client.
      if (dropping) return cut();
      client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on("error", () => socket.destroy());
      socket.on("close", () => {
        sockets.delete(socket);
        (socket === client ? upstream : client).destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxied = new URL(databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String((server.address() as AddressInfo).port);
  return {
    url: proxied.toString(),
    arm: (marker, pass) => new Promise((resolve) => (armed = { marker, pass, cut: resolve })),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

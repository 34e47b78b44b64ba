/**
 * `close()` (what `golem-stream serve` does on SIGINT/SIGTERM on a single
 * node) tells every client the server is going away: close 1001, which a
 * client resumes after at once, not a connection that simply vanishes (1006).
 */
import { describe, expect, it } from "vitest";
import { RawClient, demoStart, startTestServer, v } from "./helpers.js";

describe("closing the server", () => {
  it("closes every client's connection with 1001, including one in the middle of an invocation", async () => {
    const server = await startTestServer();
    try {
      const busy = await RawClient.connect(server.url);
      busy.send(demoStart("count", v.record(v.u32(100_000), v.u32(1))));
      await busy.nextOf("outputStreamItem");
      const idle = await RawClient.connect(server.url);
      await server.close();
      const [busyEnd, idleEnd] = await Promise.all([busy.all(), idle.all()]);
      expect(busyEnd.closed.code).toBe(1001);
      expect(idleEnd.closed.code).toBe(1001);
    } finally {
      await server.dispose();
    }
  });
});

/**
 * A socket the server stops reading (its turn's share read, or backpressure) must still read the
 * client's close frame once the server closes it: otherwise the close handshake waits for the
 * peer's TCP close or for `ws`'s 30 s close timer, and the connection stays open meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawClient } from "./helpers.js";
import { startProbeServer } from "./probe-server.js";

let server: Awaited<ReturnType<typeof startProbeServer>>;
beforeAll(async () => {
  // Every message uses up its turn's share: the socket is paused whenever the server closes it.
  server = await startProbeServer({ maxReadBytesPerTurn: 1 });
});
afterAll(async () => {
  await server.dispose();
});

describe("closing a paused socket", () => {
  it(
    "completes the close handshake at once, well inside ws's 30 s close timer",
    async () => {
      const client = await RawClient.connect(server.url);
      // No attempt can be read from a binary first message: protocol-error, close 1002.
      client.sendRaw(new Uint8Array([1, 2, 3]), true);
      const { closed } = await client.all();
      expect(closed.code).toBe(1002);
    },
    // A bound, not a wait: the handshake ends in milliseconds; a paused socket would take 30 s.
    10_000,
  );
});
